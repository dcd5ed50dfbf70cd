//! EXPLAIN output: the plan tree as indented text, PostgreSQL's layout, with actual rows,
//! loops and times under ANALYZE, and `Buffers: shared hit=N read=M tier_hit=K` per node
//! under BUFFERS (read = tier hits + storage reads; inclusive of the node's children).

use crate::exec::{NodeStats, OperatorMemory, SortMethod};
use crate::plan::{Access, CompareOp, Expr, JoinKind, Plan, PlanKind, Quantifier};
use crate::types::Datum;

/// The planner's estimated rows of a plan node (EXPLAIN's COSTS).
pub type Estimate<'e> = &'e dyn Fn(&Plan) -> f64;

pub fn render(
    plan: &Plan,
    stats: Option<&[NodeStats]>,
    buffers: bool,
    estimate: Option<Estimate<'_>>,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut render = Render { stats, buffers, subplans: 0, estimate };
    render.node(plan, 0, &mut lines);
    lines
}

/// What every node of one rendering shares: the statistics, and the count of subplans
/// numbered so far (PostgreSQL numbers them through the statement).
struct Render<'s> {
    stats: Option<&'s [NodeStats]>,
    buffers: bool,
    subplans: usize,
    /// With COSTS (the default): each node's estimated rows.
    estimate: Option<Estimate<'s>>,
}

/// An INSERT's, UPDATE's or DELETE's plan as PostgreSQL shows it: its own node on top
/// ("Insert on t" and details such as ON CONFLICT's), the source plan as its child.
pub fn render_modify(title: String, details: Vec<String>, source: Vec<String>) -> Vec<String> {
    let mut lines = Vec::with_capacity(1 + details.len() + source.len());
    lines.push(title);
    lines.extend(details.into_iter().map(|detail| format!("  {detail}")));
    for (position, line) in source.into_iter().enumerate() {
        lines.push(if position == 0 { format!("  ->  {line}") } else { format!("      {line}") });
    }
    lines
}

fn title(plan: &Plan) -> String {
    match &plan.kind {
        PlanKind::OneRow => "Result".into(),
        PlanKind::Values { rows } => format!("Values Scan ({} rows)", rows.len()),
        PlanKind::Scan { table, access, .. } => match access {
            Access::Full => format!("Seq Scan on {}", table.name),
            Access::Primary { .. } => {
                format!("Index Scan using {}_pkey on {}", table.name, table.name)
            }
            Access::Index { name, .. }
            | Access::Keys { name: Some(name), .. }
            | Access::Nearest { name, .. } => {
                format!("Index Scan using {} on {}", name, table.name)
            }
            Access::Keys { name: None, .. } => {
                format!("Index Scan using {}_pkey on {}", table.name, table.name)
            }
        },
        PlanKind::SystemView { name } => format!("Function Scan on {name}"),
        PlanKind::Series { .. } => "Function Scan on generate_series".into(),
        PlanKind::ProjectSet { .. } => "ProjectSet".into(),
        PlanKind::Ordinality { .. } => "Ordinality".into(),
        PlanKind::Filter { .. } => "Filter".into(),
        PlanKind::LockRows { .. } => "LockRows".into(),
        PlanKind::Project { .. } => "Result".into(),
        PlanKind::NestedLoopJoin { kind, .. } => format!("Nested Loop{}", join_suffix(*kind)),
        PlanKind::HashJoin { kind, .. } => {
            format!("Hash{} Join", join_word(*kind))
        }
        PlanKind::LateralJoin { kind, .. } => format!("Nested Loop{}", join_suffix(*kind)),
        PlanKind::IndexJoin { kind, .. } => {
            format!("Nested Loop{} (index lookup)", join_suffix(*kind))
        }
        PlanKind::Aggregate { groups, .. } => {
            if groups.is_empty() {
                "Aggregate".into()
            } else {
                "HashAggregate".into()
            }
        }
        PlanKind::Expand { sets, .. } => format!("Grouping Sets Expand ({} sets)", sets.len()),
        PlanKind::Window { .. } => "WindowAgg".into(),
        PlanKind::Sort { .. } => "Sort".into(),
        PlanKind::Limit { .. } => "Limit".into(),
        PlanKind::Distinct { .. } => "HashAggregate (distinct)".into(),
        PlanKind::Union { all, .. } => {
            if *all {
                "Append".into()
            } else {
                "HashSetOp Union".into()
            }
        }
        PlanKind::SetDifference { intersect, .. } => {
            if *intersect {
                "HashSetOp Intersect".into()
            } else {
                "HashSetOp Except".into()
            }
        }
        PlanKind::RecursiveUnion { .. } => "Recursive Union".into(),
        PlanKind::WorkTableScan { name, cte: true, .. } => format!("CTE Scan on {name}"),
        PlanKind::WorkTableScan { name, .. } => format!("WorkTable Scan on {name}"),
    }
}

fn join_suffix(kind: JoinKind) -> &'static str {
    match kind {
        JoinKind::Inner => "",
        JoinKind::Left => " Left Join",
        JoinKind::Full => " Full Join",
    }
}

/// The join type in a hash join's title ("Hash Left Join", "Hash Full Join").
fn join_word(kind: JoinKind) -> &'static str {
    match kind {
        JoinKind::Inner => "",
        JoinKind::Left => " Left",
        JoinKind::Full => " Full",
    }
}

/// Totals of a subtree (PostgreSQL reports buffers inclusive of children).
fn inclusive(plan: &Plan, stats: &[NodeStats]) -> NodeStats {
    // A node's measurement already covers its children (they run inside it) and excludes
    // its consumer, so it is inclusive as recorded.
    stats.get(plan.id).cloned().unwrap_or_default()
}

impl Render<'_> {
    fn node(&mut self, plan: &Plan, depth: usize, lines: &mut Vec<String>) {
        let (stats, buffers) = (self.stats, self.buffers);
        let indent =
            if depth == 0 { String::new() } else { format!("{}->  ", "      ".repeat(depth - 1)) };
        let detail_indent = " ".repeat(if depth == 0 { 2 } else { 6 * depth + 2 });
        let mut line = format!("{indent}{}", title(plan));
        if let Some(estimate) = self.estimate {
            // Rounded as PostgreSQL prints rows (never below one).
            line.push_str(&format!("  (rows={:.0})", estimate(plan).max(1.0)));
        }
        if let Some(stats) = stats {
            let own = stats.get(plan.id).cloned().unwrap_or_default();
            let total = inclusive(plan, stats);
            #[allow(clippy::cast_precision_loss)]
            let time_ms = total.time_ns as f64 / 1e6 / (own.loops.max(1) as f64);
            line.push_str(&format!(
                "  (actual time={time_ms:.3} rows={} loops={})",
                own.rows / own.loops.max(1),
                own.loops
            ));
            if own.loops == 0 {
                line.truncate(line.rfind("  (actual").unwrap_or(line.len()));
                line.push_str("  (never executed)");
            }
            lines.push(line);
            detail(plan, &detail_indent, lines);
            if let Some(memory) = own.memory {
                lines.push(format!("{detail_indent}{}", memory_line(memory)));
            }
            if buffers {
                let counters = total.counters;
                lines.push(format!(
                    "{detail_indent}Buffers: shared hit={} read={} tier_hit={}",
                    counters.dram_hits,
                    counters.tier_hits + counters.volume_reads,
                    counters.tier_hits
                ));
            }
        } else {
            lines.push(line);
            detail(plan, &detail_indent, lines);
        }
        let subqueries = node_subqueries(plan);
        let (init_plans, sub_plans): (Vec<_>, Vec<_>) =
            subqueries.into_iter().partition(|subquery| subquery.initial);
        for subquery in init_plans {
            self.subplan(subquery, &detail_indent, lines);
        }
        for child in plan.inputs() {
            self.node(child, depth + 1, lines);
        }
        for subquery in sub_plans {
            self.subplan(subquery, &detail_indent, lines);
        }
    }

    /// A subquery of a node's expressions under its `InitPlan N` or `SubPlan N` line, its
    /// tree indented below it as PostgreSQL's.
    fn subplan(&mut self, subquery: NodeSubquery<'_>, indent: &str, lines: &mut Vec<String>) {
        self.subplans += 1;
        let label = if subquery.initial {
            format!("InitPlan {} (returns ${})", self.subplans, self.subplans - 1)
        } else if subquery.hashed {
            format!("SubPlan {} (hashed)", self.subplans)
        } else {
            format!("SubPlan {}", self.subplans)
        };
        lines.push(format!("{indent}{label}"));
        let mut tree = Vec::new();
        self.node(subquery.plan, 1, &mut tree);
        lines.extend(tree.into_iter().map(|line| format!("{indent}  {line}")));
    }
}

/// A subquery in a node's expressions.
struct NodeSubquery<'p> {
    plan: &'p Plan,
    /// Uncorrelated scalar, EXISTS or ARRAY: run once (PostgreSQL's InitPlan).
    initial: bool,
    /// Uncorrelated IN: run once into a hash table (PostgreSQL's hashed SubPlan).
    hashed: bool,
}

/// The subqueries of `plan`'s own expressions, in order (not those inside them).
fn node_subqueries(plan: &Plan) -> Vec<NodeSubquery<'_>> {
    let mut exprs: Vec<&Expr> = Vec::new();
    match &plan.kind {
        PlanKind::Filter { predicate: expr, .. }
        | PlanKind::Scan { filter: Some(expr), .. }
        | PlanKind::NestedLoopJoin { on: Some(expr), .. }
        | PlanKind::LateralJoin { on: Some(expr), .. }
        | PlanKind::HashJoin { residual: Some(expr), .. }
        | PlanKind::IndexJoin { residual: Some(expr), .. } => exprs.push(expr),
        PlanKind::Project { exprs: list, .. } => exprs.extend(list),
        PlanKind::Aggregate { groups, aggregates, .. } => {
            exprs.extend(groups);
            exprs.extend(aggregates.iter().flat_map(|call| &call.args));
        }
        PlanKind::Values { rows } => exprs.extend(rows.iter().flatten()),
        _ => {}
    }
    let mut found = Vec::new();
    for expr in exprs {
        collect_subqueries(expr, &mut found);
    }
    found
}

fn collect_subqueries<'p>(expr: &'p Expr, found: &mut Vec<NodeSubquery<'p>>) {
    for child in expr.children() {
        collect_subqueries(child, found);
    }
    // PostgreSQL runs an uncorrelated scalar or row subquery once (an InitPlan) and
    // hashes an uncorrelated `= ANY` (IN, NOT IN); ANY and ALL with other operators stay
    // SubPlans.
    let (plan, correlated, once, hashable) = match expr {
        Expr::InSubquery { plan, correlated, op, quantifier, .. } => (
            plan,
            *correlated,
            *quantifier == Quantifier::Single,
            *op == CompareOp::Eq && *quantifier == Quantifier::Any,
        ),
        Expr::Exists { plan, correlated, .. }
        | Expr::ScalarSubquery { plan, correlated, .. }
        | Expr::ArraySubquery { plan, correlated, .. } => (plan, *correlated, true, false),
        _ => return,
    };
    found.push(NodeSubquery {
        plan,
        initial: !correlated && once,
        hashed: !correlated && hashable,
    });
}

fn detail(plan: &Plan, indent: &str, lines: &mut Vec<String>) {
    match &plan.kind {
        PlanKind::Scan { table, access, filter, .. } => {
            match access {
                Access::Primary { .. } | Access::Index { .. } => {
                    lines.push(format!("{indent}Index Cond: key range from WHERE"))
                }
                Access::Keys { keys, array: None, .. } => {
                    lines.push(format!("{indent}Index Cond: {} listed keys from WHERE", keys.len()))
                }
                Access::Keys { array: Some(_), .. } => {
                    lines.push(format!("{indent}Index Cond: listed keys from an array in WHERE"))
                }
                Access::Nearest { column, operator, query, .. } => {
                    let query = match query {
                        Expr::Literal(Datum::Vector(elements)) => {
                            format!("'{}'::vector", crate::types::format_vector(elements))
                        }
                        Expr::Literal(Datum::HalfVec(elements)) => {
                            format!("'{}'::halfvec", crate::types::format_halfvec(elements))
                        }
                        Expr::Literal(Datum::Bit(bits)) => {
                            format!("'{}'::\"bit\"", crate::types::format_bit_string(bits))
                        }
                        Expr::Parameter(index) => format!("${}", index + 1),
                        _ => "(query)".into(),
                    };
                    let column = &table.columns[*column].name;
                    lines.push(format!("{indent}Order By: ({column} {operator} {query})"));
                }
                Access::Full => {}
            }
            if filter.is_some() {
                lines.push(format!("{indent}Filter: (predicate)"));
            }
        }
        PlanKind::HashJoin { left_keys, .. } => {
            lines.push(format!("{indent}Hash Cond: {} key(s)", left_keys.len()))
        }
        PlanKind::Sort { keys, .. } => {
            let keys: Vec<String> = keys
                .iter()
                .map(|key| {
                    format!("${}{}", key.column + 1, if key.descending { " DESC" } else { "" })
                })
                .collect();
            lines.push(format!("{indent}Sort Key: {}", keys.join(", ")));
        }
        _ => {}
    }
}

/// PostgreSQL's lines: `Sort Method: quicksort  Memory: 25kB`, `Sort Method: external merge
/// Disk: 1234kB`, `Batches: 5  Memory Usage: 4145kB  Disk Usage: 1234kB`.
fn memory_line(memory: OperatorMemory) -> String {
    let kilobytes = |bytes: u64| bytes.div_ceil(1024);
    let memory_kb = |bytes: usize| kilobytes(u64::try_from(bytes).expect("usize is 64 bits"));
    match memory {
        OperatorMemory::Sort { method: SortMethod::ExternalMerge, disk_bytes, .. } => {
            format!("Sort Method: external merge  Disk: {}kB", kilobytes(disk_bytes))
        }
        OperatorMemory::Sort { method, memory_bytes, .. } => {
            let name = if method == SortMethod::TopN { "top-N heapsort" } else { "quicksort" };
            format!("Sort Method: {name}  Memory: {}kB", memory_kb(memory_bytes))
        }
        OperatorMemory::Hash { batches, memory_bytes, disk_bytes } => {
            let mut line =
                format!("Batches: {batches}  Memory Usage: {}kB", memory_kb(memory_bytes));
            if disk_bytes > 0 {
                line.push_str(&format!("  Disk Usage: {}kB", kilobytes(disk_bytes)));
            }
            line
        }
    }
}
