//! OR factoring: conjuncts common to every branch of an OR are taken out of it,
//! `(a AND b) OR (a AND c)` → `a AND (b OR c)`, before join keys are looked for, so that a
//! join key written in every branch (TPC-H Q19's `p_partkey = l_partkey`) hashes the join
//! instead of leaving a keyless nested loop, and a conjunct of one side filters it below
//! the join.
//!
//! Exact in SQL's three-valued logic: AND distributes over OR for true, false and NULL
//! alike, and when a branch is nothing but the common conjuncts, `a OR (a AND c)` is `a`
//! (absorption holds for NULL too: NULL OR (NULL AND c) is NULL for every c). A conjunct
//! calling a volatile function or holding a subquery is never taken out: it would be
//! evaluated another number of times.

use crate::plan::*;

/// Splits `expr` into its conjuncts, factoring each OR among them.
pub(crate) fn split_factored(expr: Expr, out: &mut Vec<Expr>) {
    let mut conjuncts = Vec::new();
    split_conjuncts(expr, &mut conjuncts);
    for conjunct in conjuncts {
        match conjunct {
            Expr::Or(..) => factor_or(conjunct, out),
            other => out.push(other),
        }
    }
}

/// Pushes the conjuncts of `or` common to all its branches, then what is left of the OR
/// (nothing when a branch was only common conjuncts).
fn factor_or(or: Expr, out: &mut Vec<Expr>) {
    let mut disjuncts = Vec::new();
    split_disjuncts(or, &mut disjuncts);
    assert!(disjuncts.len() >= 2, "an OR has two branches");
    let branches: Vec<Vec<(Option<String>, Expr)>> = disjuncts
        .into_iter()
        .map(|branch| {
            let mut conjuncts = Vec::new();
            split_conjuncts(branch, &mut conjuncts);
            conjuncts.into_iter().map(|conjunct| (factor_key(&conjunct), conjunct)).collect()
        })
        .collect();
    let mut common: Vec<&str> = Vec::new();
    for (key, conjunct) in &branches[0] {
        let Some(key) = key else { continue };
        let everywhere = branches[1..]
            .iter()
            .all(|branch| branch.iter().any(|(other, _)| other.as_deref() == Some(key.as_str())));
        if everywhere && !common.contains(&key.as_str()) {
            common.push(key);
            out.push(conjunct.clone());
        }
    }
    let rest: Vec<Vec<Expr>> = branches
        .iter()
        .map(|branch| {
            branch
                .iter()
                .filter(|(key, _)| !key.as_deref().is_some_and(|key| common.contains(&key)))
                .map(|(_, conjunct)| conjunct.clone())
                .collect()
        })
        .collect();
    if rest.iter().any(Vec::is_empty) {
        assert!(!common.is_empty(), "a branch without conjuncts lost them to factoring");
        return;
    }
    out.push(or_all(rest.into_iter().map(and_all).collect()));
}

fn split_disjuncts(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::Or(left, right) => {
            split_disjuncts(*left, out);
            split_disjuncts(*right, out);
        }
        other => out.push(other),
    }
}

fn or_all(mut disjuncts: Vec<Expr>) -> Expr {
    let mut expr = disjuncts.pop().expect("an OR has branches");
    while let Some(previous) = disjuncts.pop() {
        expr = Expr::Or(Box::new(previous), Box::new(expr));
    }
    expr
}

/// What identifies a conjunct among the branches (its bound form), None for one that must
/// not be taken out.
fn factor_key(conjunct: &Expr) -> Option<String> {
    movable(conjunct).then(|| format!("{conjunct:?}"))
}

fn movable(expr: &Expr) -> bool {
    let here = match expr {
        Expr::InSubquery { .. }
        | Expr::Exists { .. }
        | Expr::ScalarSubquery { .. }
        | Expr::ArraySubquery { .. } => false,
        Expr::Function(call) => !call.function.volatile,
        _ => true,
    };
    here && expr.children().into_iter().all(movable)
}
