//! GROUPING SETS, ROLLUP and CUBE: a GROUP BY list as the grouping sets it names, and
//! GROUPING().
//!
//! Each GROUP BY item names a list of sets (a plain expression one set of itself, `()` the
//! empty set, ROLLUP its prefixes, CUBE every subset, GROUPING SETS its elements); the
//! clause's sets are the concatenations of one set from each item, in order (PostgreSQL's
//! expand_grouping_sets). With more than one set the Aggregate groups an Expand node's rows
//! (`PlanKind::Expand`) by every key and the set's number; the set's number is a hidden
//! last key, which GROUPING() maps to its bits.

use super::*;

/// A GROUP BY item's grouping sets, each a list of expressions.
type SetList = Vec<Vec<ast::Expr>>;

/// PostgreSQL's bound on the elements of one CUBE (54001 past it).
const CUBE_ELEMENTS_MAX: usize = 12;

/// PostgreSQL's bound on GROUPING()'s arguments (54023 past it): its result is an int4
/// with a bit per argument.
const GROUPING_ARGUMENTS_MAX: usize = 31;

/// The hidden key holding the set's number: its text matches no expression's.
const SET_NUMBER_KEY: &str = "\u{0}grouping set";

/// The grouping sets of a GROUP BY list, or None when it has only plain expressions (one
/// set, grouped as always).
pub(super) fn grouping_sets(items: &[&ast::Expr]) -> Result<Option<SetList>> {
    if !items.iter().any(|item| is_grouping_construct(item)) {
        return Ok(None);
    }
    let mut sets: SetList = vec![Vec::new()];
    for item in items {
        let item_sets = item_sets(item)?;
        if sets.len().saturating_mul(item_sets.len()) > GROUPING_SETS_MAX {
            return Err(too_many_sets());
        }
        let mut product = Vec::with_capacity(sets.len() * item_sets.len());
        for set in &sets {
            for item_set in &item_sets {
                product.push(set.iter().chain(item_set).cloned().collect());
            }
        }
        sets = product;
    }
    assert!(!sets.is_empty() && sets.len() <= GROUPING_SETS_MAX);
    Ok(Some(sets))
}

fn is_grouping_construct(expr: &ast::Expr) -> bool {
    match expr {
        ast::Expr::Rollup(_) | ast::Expr::Cube(_) | ast::Expr::GroupingSets(_) => true,
        ast::Expr::Tuple(items) => items.is_empty(),
        _ => false,
    }
}

fn too_many_sets() -> SqlError {
    SqlError::new("54001", format!("too many grouping sets present (maximum {GROUPING_SETS_MAX})"))
}

/// The sets one GROUP BY item names.
fn item_sets(item: &ast::Expr) -> Result<SetList> {
    match item {
        ast::Expr::Rollup(elements) => Ok(rollup(elements)),
        ast::Expr::Cube(elements) => cube(elements),
        ast::Expr::GroupingSets(elements) => {
            let mut sets = Vec::new();
            for element in elements {
                match nested(element)? {
                    Some(nested) => sets.extend(nested),
                    None => sets.push(element.clone()),
                }
                if sets.len() > GROUPING_SETS_MAX {
                    return Err(too_many_sets());
                }
            }
            Ok(sets)
        }
        ast::Expr::Tuple(items) if items.is_empty() => Ok(vec![Vec::new()]),
        other => Ok(vec![vec![other.clone()]]),
    }
}

/// ROLLUP (e1, ..., en): (e1, ..., en), ..., (e1), ().
fn rollup(elements: &[Vec<ast::Expr>]) -> SetList {
    (0..=elements.len()).rev().map(|length| elements[..length].concat()).collect()
}

/// CUBE (e1, ..., en): every subset, the whole first and () last.
fn cube(elements: &[Vec<ast::Expr>]) -> Result<SetList> {
    if elements.len() > CUBE_ELEMENTS_MAX {
        return Err(SqlError::new(
            "54001",
            format!("CUBE is limited to {CUBE_ELEMENTS_MAX} elements"),
        ));
    }
    let count = 1_usize << elements.len();
    Ok((0..count)
        .rev()
        .map(|mask| {
            let chosen = elements.iter().enumerate().filter(|(index, _)| mask >> index & 1 == 1);
            chosen.flat_map(|(_, element)| element.iter().cloned()).collect()
        })
        .collect())
}

/// A ROLLUP or CUBE inside GROUPING SETS (sqlparser reads it as a function call): its sets.
fn nested(element: &[ast::Expr]) -> Result<Option<SetList>> {
    let [ast::Expr::Function(function)] = element else { return Ok(None) };
    let name = function.name.to_string().to_ascii_lowercase();
    if name != "rollup" && name != "cube" {
        return Ok(None);
    }
    let ast::FunctionArguments::List(list) = &function.args else { return Ok(None) };
    let mut elements = Vec::with_capacity(list.args.len());
    for arg in &list.args {
        let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) = arg else {
            return Err(SqlError::syntax(format!("syntax error in {}", name.to_uppercase())));
        };
        elements.push(match expr {
            ast::Expr::Tuple(items) => items.clone(),
            ast::Expr::Nested(inner) => vec![(**inner).clone()],
            other => vec![other.clone()],
        });
    }
    Ok(Some(if name == "rollup" { rollup(&elements) } else { cube(&elements)? }))
}

impl<'a> Binder<'a> {
    /// Binds the keys of `sets` (each distinct expression once) over `scope` and starts the
    /// grouping state; with more than one set, the set's number is a hidden last key. With
    /// `distinct` (GROUP BY DISTINCT) a set grouping by the same keys as an earlier one is
    /// dropped, as PostgreSQL's expand_grouping_sets does.
    pub(super) fn bind_grouping_sets(
        &mut self,
        sets: SetList,
        distinct: bool,
        projection: &[ast::SelectItem],
        scope: &Scope,
    ) -> Result<()> {
        let mut keys: Vec<(String, Expr, SqlType)> = Vec::new();
        let mut positions: Vec<Vec<usize>> = Vec::with_capacity(sets.len());
        for set in &sets {
            let mut set_positions = Vec::with_capacity(set.len());
            for expr in set {
                let resolved = self.resolve_group_expr(expr, projection, scope)?;
                let text = resolved.to_string();
                let position = match keys.iter().position(|(key, _, _)| *key == text) {
                    Some(position) => position,
                    None => {
                        self.clause = Some("GROUP BY");
                        let outcome = self.expr(&resolved, scope, None);
                        self.clause = None;
                        let (bound, ty) = outcome?;
                        keys.push((text, bound, ty));
                        keys.len() - 1
                    }
                };
                if !set_positions.contains(&position) {
                    set_positions.push(position);
                }
            }
            positions.push(set_positions);
        }
        if distinct {
            let mut seen = std::collections::HashSet::with_capacity(positions.len());
            positions.retain(|set| {
                let mut sorted = set.clone();
                sorted.sort_unstable();
                seen.insert(sorted)
            });
        }
        let sets = (positions.len() > 1).then_some(positions);
        if sets.is_some() {
            keys.push((SET_NUMBER_KEY.to_string(), Expr::Literal(Datum::Null), SqlType::Int4));
        }
        self.grouping = Some(Grouping { input: scope.clone(), keys, aggregates: Vec::new(), sets });
        Ok(())
    }

    /// GROUPING(args): an int4 with a bit per argument (the last argument the lowest bit),
    /// set when the row's grouping set does not group by that argument.
    pub(super) fn grouping_call(
        &mut self,
        args: &[ast::Expr],
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let not_grouping_expression = || {
            SqlError::new(
                "42803",
                "arguments to GROUPING must be grouping expressions of the associated query level",
            )
        };
        if self.grouping.is_none() {
            return Err(match self.clause {
                Some(clause) => SqlError::new(
                    "42803",
                    format!("grouping operations are not allowed in {clause}"),
                ),
                None => not_grouping_expression(),
            });
        }
        if args.len() > GROUPING_ARGUMENTS_MAX {
            return Err(SqlError::new("54023", "GROUPING must have fewer than 32 arguments"));
        }
        if args.iter().any(contains_aggregate) {
            return Err(SqlError::new("42803", "aggregate function calls cannot be nested"));
        }
        let key_count = self.grouping.as_ref().map_or(0, Grouping::real_key_count);
        let mut arguments = Vec::with_capacity(args.len());
        for arg in args {
            match self.expr(arg, scope, None) {
                Ok((Expr::Column(position), _)) if position < key_count => arguments.push(position),
                Ok(_) | Err(_) => return Err(not_grouping_expression()),
            }
        }
        let grouping = self.grouping.as_ref().expect("checked above");
        let Some(sets) = &grouping.sets else {
            // One set: it groups by every key.
            return Ok((Expr::Literal(Datum::Int(0)), SqlType::Int4));
        };
        let branches = sets
            .iter()
            .enumerate()
            .map(|(number, set)| {
                let bits = arguments
                    .iter()
                    .fold(0_i64, |bits, key| (bits << 1) | i64::from(!set.contains(key)));
                let number = i64::try_from(number).expect("at most GROUPING_SETS_MAX sets");
                (Expr::Literal(Datum::Int(number)), Expr::Literal(Datum::Int(bits)))
            })
            .collect();
        let operand = Some(Box::new(Expr::Column(key_count)));
        Ok((Expr::Case { operand, branches, otherwise: None }, SqlType::Int4))
    }

    /// The Expand node under the Aggregate of a GROUP BY with several sets: the aggregate
    /// groups by the appended keys and set number, and skips the empty sets' first rows.
    /// `sets` was taken out of `grouping`.
    pub(super) fn expand_grouping_sets(
        &mut self,
        plan: Plan,
        grouping: &mut Grouping,
        sets: Vec<Vec<usize>>,
    ) -> (Plan, Vec<Expr>) {
        let width = plan.arity();
        assert_eq!(grouping.keys.last().map(|(key, _, _)| key.as_str()), Some(SET_NUMBER_KEY));
        let key_count = grouping.keys.len() - 1;
        let keys: Vec<Expr> =
            grouping.keys[..key_count].iter().map(|(_, expr, _)| expr.clone()).collect();
        let mut columns = plan.columns.clone();
        columns.extend(grouping.keys.iter().map(|(name, _, ty)| computed_column(name, ty.clone())));
        columns.push(computed_column("?input row?", SqlType::Bool));
        let input_row = Expr::Column(width + key_count + 1);
        for (_, call) in &mut grouping.aggregates {
            call.filter = Some(match call.filter.take() {
                Some(filter) => Expr::And(Box::new(input_row.clone()), Box::new(filter)),
                None => input_row.clone(),
            });
        }
        let groups = (0..=key_count).map(|key| Expr::Column(width + key)).collect();
        let expand = PlanKind::Expand { input: Box::new(plan), keys, sets };
        (self.plan(expand, columns), groups)
    }
}

impl Grouping {
    /// The GROUP BY keys without the hidden set number.
    pub(super) fn real_key_count(&self) -> usize {
        self.keys.len() - usize::from(self.sets.is_some())
    }
}
