//! Scalar function calls: the registry entry is resolved once, here, and the bound call
//! holds it with its arguments coerced as the entry's signature says.

use super::*;
use crate::functions::{self, Coercion};

/// Binds a call of the scalar function `name` on bound arguments.
pub(crate) fn bind_call(name: &str, args: Vec<(Expr, SqlType)>) -> Result<(Expr, SqlType)> {
    let types: Vec<SqlType> = args.iter().map(|(_, ty)| ty.clone()).collect();
    if name == "mod" && args.len() == 2 {
        return modulo(args);
    }
    refuse_unsupported(name)?;
    let Some(function) = functions::lookup(name) else {
        if POSTGRES_FUNCTIONS_NOT_BUILT.contains(&name) {
            return Err(SqlError::unsupported(format!("function {name}() is not supported")));
        }
        return Err(functions::no_function(name, &types));
    };
    if !function.arguments.contains(&args.len()) {
        return Err(functions::no_function(name, &types));
    }
    let signature = (function.resolve)(name, &types)?;
    debug_assert_eq!(signature.arguments.len(), args.len(), "{name}: one coercion per argument");
    let mut bound = Vec::with_capacity(args.len());
    let mut arg_types = Vec::with_capacity(args.len());
    for ((expr, ty), coercion) in args.into_iter().zip(signature.arguments) {
        let (expr, ty) = match coercion {
            Coercion::Keep => (expr, ty),
            Coercion::Implicit(target) => (coerce(expr, &ty, &target, false)?, target),
            Coercion::Explicit(target) => (coerce(expr, &ty, &target, true)?, target),
        };
        bound.push(expr);
        arg_types.push(ty);
    }
    let output = signature.output;
    let call =
        FunctionCall { function, args: bound, arg_types, output: output.clone(), operator: None };
    Ok((Expr::Function(call), output))
}

/// Functions PostgreSQL has that tierdb does not run: 0A000 at bind time, so that no
/// statement fails halfway through its rows.
/// Functions of PostgreSQL's chapter 9 that tierdb does not have yet: a call is 0A000
/// naming the function (a gap), not 42883 (which says PostgreSQL has no such function).
const POSTGRES_FUNCTIONS_NOT_BUILT: &[&str] =
    &["convert", "json_each", "json_each_text", "jsonb_each", "jsonb_each_text"];

fn refuse_unsupported(name: &str) -> Result<()> {
    if super::set_functions::json_record_function(name).is_some() {
        // PostgreSQL's own error: a record without a column definition list.
        return Err(SqlError::unsupported(format!(
            "could not determine row type for result of {name}"
        )));
    }
    if crate::system::view_columns(name).is_some() {
        return Err(SqlError::unsupported(format!(
            "{name}() returns a set of rows: it is only supported in FROM"
        )));
    }
    Ok(())
}

/// `mod(a, b)` is the `%` operator.
fn modulo(args: Vec<(Expr, SqlType)>) -> Result<(Expr, SqlType)> {
    let mut iter = args.into_iter();
    let (Some((left, left_ty)), Some((right, right_ty))) = (iter.next(), iter.next()) else {
        return Err(SqlError::internal("mod is bound with two arguments"));
    };
    let ty = SqlType::arithmetic(&left_ty, &right_ty)
        .ok_or_else(|| functions::no_function("mod", &[left_ty.clone(), right_ty.clone()]))?;
    let expr = Expr::Arithmetic {
        op: ArithmeticOp::Modulo,
        left: Box::new(coerce(left, &left_ty, &ty, false)?),
        right: Box::new(coerce(right, &right_ty, &ty, false)?),
        ty: ty.clone(),
    };
    Ok((expr, ty))
}
