//! Named windows: `SELECT f() OVER w, g() OVER (w ORDER BY x) ... WINDOW w AS (...)`.
//!
//! Before a SELECT with a WINDOW clause is bound, its definitions are resolved in order (each
//! may start from an earlier one) and every OVER clause of its select list and ORDER BY that
//! names one is replaced by the window it denotes, so the binder sees only inline windows
//! (bind/window.rs). PostgreSQL's rules for copying a window (parse_clause.c,
//! transformWindowDefinitions): the copy keeps the referenced PARTITION BY (it cannot be
//! given again), may add an ORDER BY only when the referenced window has none, and cannot
//! copy a window that has a frame clause; `OVER w` without parentheses takes the window as
//! it is, frame included. OVER clauses inside subqueries belong to those subqueries' own
//! WINDOW clauses and are left alone.

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};

use super::*;
use crate::parse::frame_exclusion::{marked_window_name, split_window_name};

/// The SELECT and ORDER BY with named windows resolved; None when the SELECT has no WINDOW
/// clause (an OVER naming a window is then 42704 in bind/window.rs).
pub(super) fn resolve(
    select: &ast::Select,
    order_by: &[ast::OrderByExpr],
) -> Result<Option<(ast::Select, Vec<ast::OrderByExpr>)>> {
    if select.named_window.is_empty() {
        return Ok(None);
    }
    let definitions = definitions(&select.named_window)?;
    let mut resolver = Resolver { definitions: &definitions, depth: 0 };
    let mut select = select.clone();
    let mut order_by = order_by.to_vec();
    for item in &mut select.projection {
        if let ControlFlow::Break(error) = item.visit(&mut resolver) {
            return Err(error);
        }
    }
    for item in &mut order_by {
        if let ControlFlow::Break(error) = item.visit(&mut resolver) {
            return Err(error);
        }
    }
    Ok(Some((select, order_by)))
}

/// The WINDOW clause's definitions, each resolved against the ones before it.
fn definitions(named: &[ast::NamedWindowDefinition]) -> Result<Vec<(String, ast::WindowSpec)>> {
    let mut resolved: Vec<(String, ast::WindowSpec)> = Vec::with_capacity(named.len());
    for ast::NamedWindowDefinition(name, expr) in named {
        let name = ident(name);
        if resolved.iter().any(|(defined, _)| *defined == name) {
            return Err(SqlError::new("42P20", format!("window \"{name}\" is already defined")));
        }
        let spec = match expr {
            ast::NamedWindowExpr::WindowSpec(spec) => copy_window(spec, &resolved)?,
            ast::NamedWindowExpr::NamedWindow(other) => {
                return Err(SqlError::syntax(format!("syntax error at or near \"{other}\"")))
            }
        };
        resolved.push((name, spec));
    }
    Ok(resolved)
}

/// `spec` with the window it names (if any) copied in, by PostgreSQL's rules (module docs).
fn copy_window(
    spec: &ast::WindowSpec,
    definitions: &[(String, ast::WindowSpec)],
) -> Result<ast::WindowSpec> {
    // The name may carry the frame's exclusion (parse/frame_exclusion.rs).
    let (base_name, exclusion) = split_window_name(spec);
    let Some(base_name) = &base_name else { return Ok(spec.clone()) };
    let base = lookup(&ident(base_name), definitions)?;
    let name = ident(base_name);
    if !spec.partition_by.is_empty() {
        return Err(SqlError::new(
            "42P20",
            format!("cannot override PARTITION BY clause of window \"{name}\""),
        ));
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        return Err(SqlError::new(
            "42P20",
            format!("cannot override ORDER BY clause of window \"{name}\""),
        ));
    }
    if base.window_frame.is_some() {
        return Err(SqlError::new(
            "42P20",
            format!("cannot copy window \"{name}\" because it has a frame clause"),
        ));
    }
    Ok(ast::WindowSpec {
        window_name: marked_window_name(None, exclusion),
        partition_by: base.partition_by.clone(),
        order_by: if spec.order_by.is_empty() {
            base.order_by.clone()
        } else {
            spec.order_by.clone()
        },
        window_frame: spec.window_frame.clone(),
    })
}

fn lookup<'d>(
    name: &str,
    definitions: &'d [(String, ast::WindowSpec)],
) -> Result<&'d ast::WindowSpec> {
    definitions
        .iter()
        .find(|(defined, _)| defined == name)
        .map(|(_, spec)| spec)
        .ok_or_else(|| SqlError::new("42704", format!("window \"{name}\" does not exist")))
}

/// Replaces the OVER clauses of one SELECT level (not of its subqueries).
struct Resolver<'d> {
    definitions: &'d [(String, ast::WindowSpec)],
    /// Subqueries entered: their OVER clauses are theirs.
    depth: usize,
}

impl VisitorMut for Resolver<'_> {
    type Break = SqlError;

    fn pre_visit_query(&mut self, _query: &mut ast::Query) -> ControlFlow<SqlError> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut ast::Query) -> ControlFlow<SqlError> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<SqlError> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        let ast::Expr::Function(function) = expr else { return ControlFlow::Continue(()) };
        let resolved = match &function.over {
            Some(ast::WindowType::NamedWindow(name)) => {
                lookup(&ident(name), self.definitions).cloned()
            }
            Some(ast::WindowType::WindowSpec(spec)) if split_window_name(spec).0.is_some() => {
                copy_window(spec, self.definitions)
            }
            _ => return ControlFlow::Continue(()),
        };
        match resolved {
            Ok(spec) => {
                function.over = Some(ast::WindowType::WindowSpec(spec));
                ControlFlow::Continue(())
            }
            Err(error) => ControlFlow::Break(error),
        }
    }
}
