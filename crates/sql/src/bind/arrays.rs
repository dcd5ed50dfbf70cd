//! Array expressions: ARRAY[...] constructors, subscripts and slices, `op ANY/ALL (array)`,
//! and the array operators `||`, `@>`, `<@`, `&&`.

use super::*;
use crate::types::array_of;

impl<'a> Binder<'a> {
    /// `ARRAY[a, b, ...]`: the elements' common type (42804 when there is none), or the
    /// context's element type for an empty or all-untyped constructor.
    pub(crate) fn array_constructor(
        &mut self,
        array: &ast::Array,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        let element_hint = hint.and_then(SqlType::array_element).cloned();
        let mut bound = Vec::with_capacity(array.elem.len());
        for element in &array.elem {
            if matches!(element, ast::Expr::Array(_)) {
                return Err(SqlError::unsupported("multidimensional arrays are not supported"));
            }
            bound.push(self.expr(element, scope, element_hint.as_ref())?);
        }
        let mut common = SqlType::Unknown;
        for (_, ty) in &bound {
            common = SqlType::common(&common, ty).ok_or_else(|| {
                SqlError::datatype_mismatch(format!(
                    "ARRAY types {} and {} cannot be matched",
                    common.display_name(),
                    ty.display_name()
                ))
            })?;
        }
        if common == SqlType::Unknown {
            common = match (element_hint, bound.is_empty()) {
                (Some(element), _) => element,
                (None, false) => SqlType::Text,
                (None, true) => {
                    return Err(SqlError::new("42P18", "cannot determine type of empty array"))
                }
            };
        }
        let array_ty = array_of(&common)?;
        let mut elements = Vec::with_capacity(bound.len());
        for (expr, ty) in bound {
            elements.push(coerce(expr, &ty, &common, false)?);
        }
        Ok((Expr::MakeArray(elements), array_ty))
    }

    /// `name_value[index]`: PostgreSQL's name is a fixed array of bytes, so a subscript
    /// is the byte at `index` from 0 (pg_dump reads `typname[0] = '_'`): bound as
    /// `substr(value, index + 1, 1)`, empty past the end as the byte there is 0.
    fn name_byte(
        &mut self,
        value: &ast::Expr,
        index: &ast::Expr,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let one = ast::Expr::value(ast::Value::Number("1".into(), false));
        let position = ast::Expr::BinaryOp {
            left: Box::new(index.clone()),
            op: ast::BinaryOperator::Plus,
            right: Box::new(one.clone()),
        };
        let argument =
            |expr: ast::Expr| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr));
        let call = ast::Expr::Function(ast::Function {
            name: ast::ObjectName::from(vec![ast::Ident::new("substr")]),
            uses_odbc_syntax: false,
            parameters: ast::FunctionArguments::None,
            args: ast::FunctionArguments::List(ast::FunctionArgumentList {
                duplicate_treatment: None,
                args: vec![argument(value.clone()), argument(position), argument(one)],
                clauses: Vec::new(),
            }),
            filter: None,
            null_treatment: None,
            over: None,
            within_group: Vec::new(),
        });
        self.expr(&call, scope, None)
    }

    /// `value[index]`, `value[lower:upper]`, chained (`a[1:3][2]`).
    pub(crate) fn subscript(
        &mut self,
        root: &ast::Expr,
        chain: &[ast::AccessExpr],
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let (mut expr, mut ty) = self.expr(root, scope, None)?;
        if let (SqlType::Name, [ast::AccessExpr::Subscript(ast::Subscript::Index { index })]) =
            (&ty, chain)
        {
            return self.name_byte(root, index, scope);
        }
        let mut indexed = false;
        for access in chain {
            let ast::AccessExpr::Subscript(subscript) = access else {
                return Err(SqlError::unsupported(format!(
                    "field access {access} is not supported"
                )));
            };
            let Some(element) = ty.array_element().cloned() else {
                return Err(SqlError::datatype_mismatch(format!(
                    "cannot subscript type {} because it does not support subscripting",
                    ty.display_name()
                )));
            };
            if indexed {
                return Err(SqlError::unsupported("subscripts of multidimensional arrays"));
            }
            let mut bound = |bound: &ast::Expr| -> Result<Box<Expr>> {
                Ok(Box::new(self.coerced(bound, scope, &SqlType::Int4)?))
            };
            (expr, ty) = match subscript {
                ast::Subscript::Index { index } => {
                    indexed = true;
                    let lower = Some(bound(index)?);
                    (
                        Expr::Subscript { array: Box::new(expr), lower, upper: None, slice: false },
                        element,
                    )
                }
                ast::Subscript::Slice { lower_bound, upper_bound, stride } => {
                    if stride.is_some() {
                        return Err(SqlError::syntax("syntax error at or near \":\""));
                    }
                    let lower = lower_bound.as_ref().map(&mut bound).transpose()?;
                    let upper = upper_bound.as_ref().map(&mut bound).transpose()?;
                    let array = Box::new(expr);
                    (Expr::Subscript { array, lower, upper, slice: true }, array_of(&element)?)
                }
            };
        }
        Ok((expr, ty))
    }

    /// `left op ANY (array)` and `left op ALL (array)`.
    pub(crate) fn any_all(
        &mut self,
        left: &ast::Expr,
        compare_op: &ast::BinaryOperator,
        right: &ast::Expr,
        all: bool,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let op = compare_operator(compare_op).ok_or_else(|| {
            SqlError::unsupported(format!(
                "operator {compare_op} with {} is not supported",
                if all { "ALL" } else { "ANY" }
            ))
        })?;
        let (left_bound, left_ty) = self.expr(left, scope, None)?;
        let hint = match &left_ty {
            SqlType::Unknown => None,
            ty => array_of(ty).ok(),
        };
        let (mut array, mut array_ty) = self.expr(right, scope, hint.as_ref())?;
        if array_ty == SqlType::Unknown {
            let target = hint.unwrap_or(SqlType::Array(Box::new(SqlType::Text)));
            array = coerce(array, &SqlType::Unknown, &target, false)?;
            array_ty = target;
        }
        let Some(element) = array_ty.array_element().cloned() else {
            return Err(SqlError::new("42809", "op ANY/ALL (array) requires array on right side"));
        };
        let (left_bound, _, _) =
            compare_operands(left_bound, &left_ty, Expr::Literal(Datum::Null), &element)?;
        Ok((
            Expr::AnyAll { op, left: Box::new(left_bound), array: Box::new(array), all },
            SqlType::Bool,
        ))
    }

    /// `&&`: both sides of one array type (an untyped literal takes the
    /// other side's).
    pub(crate) fn array_operator(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let (left, left_ty) = self.expr(left, scope, None)?;
        let (right, right_ty) = self.expr(right, scope, Some(&left_ty))?;
        array_containment(op, (left, left_ty), (right, right_ty))
    }

    /// `||` with an array on either side: array_cat, array_append or array_prepend (an
    /// untyped literal beside an array is an array, as PostgreSQL resolves it).
    pub(crate) fn array_concat(
        &mut self,
        (left, left_ty): (Expr, SqlType),
        (right, right_ty): (Expr, SqlType),
    ) -> Result<(Expr, SqlType)> {
        let (name, left_target, right_target) =
            match (left_ty.array_element(), right_ty.array_element()) {
                (Some(_), Some(_)) => ("array_cat", left_ty.clone(), right_ty.clone()),
                (Some(_), None) if right_ty == SqlType::Unknown => {
                    ("array_cat", left_ty.clone(), left_ty.clone())
                }
                (None, Some(_)) if left_ty == SqlType::Unknown => {
                    ("array_cat", right_ty.clone(), right_ty.clone())
                }
                (Some(element), None) => ("array_append", left_ty.clone(), element.clone()),
                (None, Some(element)) => ("array_prepend", element.clone(), right_ty.clone()),
                (None, None) => return Err(SqlError::internal("array_concat without an array")),
            };
        // Untyped literals take the type their side needs; typed values are passed as they
        // are and the call's signature checks them.
        let side = |expr: Expr, ty: SqlType, target: SqlType| -> Result<(Expr, SqlType)> {
            if ty == SqlType::Unknown {
                Ok((coerce(expr, &ty, &target, false)?, target))
            } else {
                Ok((expr, ty))
            }
        };
        let left = side(left, left_ty, left_target)?;
        let right = side(right, right_ty, right_target)?;
        bind_call(name, vec![left, right])
    }
}

/// `@>`, `<@` or `&&` over bound operands (json's `@>` and `<@` come here when a side is an
/// array).
pub(crate) fn array_containment(
    op: &ast::BinaryOperator,
    (left, left_ty): (Expr, SqlType),
    (right, right_ty): (Expr, SqlType),
) -> Result<(Expr, SqlType)> {
    let name = match op {
        ast::BinaryOperator::AtArrow => "arraycontains",
        ast::BinaryOperator::ArrowAt => "arraycontained",
        _ => "arrayoverlap",
    };
    let (left, left_ty) = match left_ty {
        SqlType::Unknown => (coerce(left, &left_ty, &right_ty, false)?, right_ty.clone()),
        ty => (left, ty),
    };
    let right = coerce(right, &right_ty, &left_ty, false)?;
    bind_call(name, vec![(left, left_ty.clone()), (right, left_ty)])
}

/// The comparison an operator written with ANY/ALL denotes.
pub(crate) fn compare_operator(op: &ast::BinaryOperator) -> Option<CompareOp> {
    use ast::BinaryOperator as B;
    Some(match op {
        B::Eq => CompareOp::Eq,
        B::NotEq => CompareOp::NotEq,
        B::Lt => CompareOp::Lt,
        B::LtEq => CompareOp::LtEq,
        B::Gt => CompareOp::Gt,
        B::GtEq => CompareOp::GtEq,
        _ => return None,
    })
}
