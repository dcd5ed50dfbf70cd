//! PREPARE, EXECUTE and DEALLOCATE as SQL statements (PostgreSQL's prepare.c).
//!
//! A statement prepared by SQL is parsed and bound at PREPARE, as the extended protocol's
//! Parse does, and kept by name for the session; EXECUTE runs it with its parameters
//! (constant expressions, coerced to the parameter types as in an assignment), binding
//! again when DDL changed the catalog since (the catalog version, as for the protocol's
//! statements). Statements the extended protocol named are registered here too
//! (`register_protocol_statement`), so that EXECUTE and DEALLOCATE reach them and PREPARE
//! of a name they use is 42P05, as in PostgreSQL's one namespace per session.

use std::ops::ControlFlow;

use super::*;
use crate::output::CommandTag;

/// One named prepared statement of the session.
#[derive(Clone, Debug)]
pub(crate) struct NamedStatement {
    prepared: Prepared,
    /// Made by SQL PREPARE (false: by the extended protocol's Parse).
    from_sql: bool,
}

/// The session's named prepared statements.
#[derive(Default)]
pub(crate) struct NamedStatements {
    statements: HashMap<String, NamedStatement>,
}

fn does_not_exist(name: &str) -> SqlError {
    SqlError::new("26000", format!("prepared statement \"{name}\" does not exist"))
}

fn already_exists(name: &str) -> SqlError {
    SqlError::new("42P05", format!("prepared statement \"{name}\" already exists"))
}

impl Session {
    /// PREPARE, EXECUTE or DEALLOCATE (other dialects' forms of EXECUTE are 0A000).
    pub(crate) fn named_statement_command(
        &mut self,
        statement: &ast::Statement,
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        match statement {
            ast::Statement::Deallocate { name, .. } => self.deallocate_sql(name),
            ast::Statement::Prepare { name, data_types, statement } => {
                self.prepare_sql(name, data_types, statement)
            }
            ast::Statement::Execute {
                name: Some(name),
                parameters,
                immediate: false,
                into,
                using,
                output: false,
                default: false,
                ..
            } if into.is_empty() && using.is_empty() => self.execute_sql(name, parameters, sink),
            other => Err(SqlError::unsupported(format!(
                "statement not supported: {}",
                other.to_string().chars().take(80).collect::<String>()
            ))),
        }
    }

    /// `PREPARE name [(types)] AS statement`.
    pub(crate) fn prepare_sql(
        &mut self,
        name: &ast::Ident,
        data_types: &[ast::DataType],
        statement: &ast::Statement,
    ) -> Result<Output> {
        let name = ident(name);
        if self.named_statements.statements.contains_key(&name) {
            return Err(already_exists(&name));
        }
        let preparable = matches!(
            statement,
            ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_)
        );
        if !preparable {
            let word = statement.to_string().split_whitespace().next().unwrap_or("").to_string();
            return Err(SqlError::syntax(format!("syntax error at or near \"{word}\"")));
        }
        let types = data_types.iter().map(types::sql_type).collect::<Result<Vec<SqlType>>>()?;
        let mut prepared = Prepared::of_statement(
            statement.to_string(),
            Statement::Sql(Box::new(statement.clone())),
        );
        let (bound, parameters) =
            self.bind(statement, &types)?.expect("a preparable statement binds");
        prepared.columns = bound_columns(&bound);
        prepared.parameter_types = parameters;
        prepared.bound = Some(Arc::new((self.catalog.version(), bound)));
        let named = NamedStatement { prepared, from_sql: true };
        self.named_statements.statements.insert(name, named);
        Ok(Output::command(CommandTag::Prepare))
    }

    /// `EXECUTE name [(parameters)]`.
    pub(crate) fn execute_sql(
        &mut self,
        name: &ast::ObjectName,
        parameters: &[ast::Expr],
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        let name = object_name(name)?;
        let Some(named) = self.named_statements.statements.get(&name) else {
            return Err(does_not_exist(&name));
        };
        let mut prepared = named.prepared.clone();
        let expected = prepared.parameter_types.len();
        if parameters.len() != expected {
            return Err(SqlError::syntax(format!(
                "wrong number of parameters for prepared statement \"{name}\""
            )));
        }
        let values = self.execute_parameters(parameters, &prepared.parameter_types)?;
        let Some(statement) = prepared.statement.clone() else { return Ok(Output::Empty) };
        let outcome = self.run_statement(&statement, &mut prepared, &values, sink);
        // Keep a plan bound again after DDL for the next EXECUTE.
        if let Some(named) = self.named_statements.statements.get_mut(&name) {
            named.prepared = prepared;
        }
        outcome
    }

    /// EXECUTE's parameter values: constant expressions coerced to the statement's
    /// parameter types.
    fn execute_parameters(
        &mut self,
        parameters: &[ast::Expr],
        types: &[SqlType],
    ) -> Result<Vec<Datum>> {
        if parameters.is_empty() {
            return Ok(Vec::new());
        }
        for parameter in parameters {
            let subquery = ast::visit_expressions(parameter, |expr| match expr {
                ast::Expr::Subquery(_)
                | ast::Expr::Exists { .. }
                | ast::Expr::InSubquery { .. } => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            });
            if subquery.is_break() {
                return Err(SqlError::unsupported("cannot use subquery in EXECUTE parameter"));
            }
        }
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        let empty = crate::bind::Scope::default();
        let mut row = Vec::with_capacity(parameters.len());
        for (index, (parameter, ty)) in parameters.iter().zip(types).enumerate() {
            let (expr, from) = binder.expr(parameter, &empty, Some(ty))?;
            let coerced = crate::bind::coerce(expr, &from, ty, false).map_err(|error| {
                if error.sqlstate == "42804" {
                    SqlError::datatype_mismatch(format!(
                        "parameter ${} of type {} cannot be coerced to the expected type {}",
                        index + 1,
                        from.display_name(),
                        ty.display_name()
                    ))
                } else {
                    error
                }
            })?;
            row.push(coerced);
        }
        let columns = types.iter().map(|ty| computed_column("parameter", ty.clone())).collect();
        let plan = binder.plan(crate::plan::PlanKind::Values { rows: vec![row] }, columns);
        let output = self.in_transaction(|session| {
            session.run_bound_into(&Bound::Query(plan), &[], false, None).map(|(output, _)| output)
        })?;
        match output {
            Output::Rows { mut rows, .. } if rows.len() == 1 => Ok(rows.pop().expect("one row")),
            _ => Err(SqlError::internal("EXECUTE's parameters gave no row")),
        }
    }

    /// `DEALLOCATE [PREPARE] name | ALL`.
    pub(crate) fn deallocate_sql(&mut self, name: &ast::Ident) -> Result<Output> {
        if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
            self.deallocate_all();
            return Ok(Output::command(CommandTag::DeallocateAll));
        }
        let name = ident(name);
        if self.named_statements.statements.remove(&name).is_none() {
            return Err(does_not_exist(&name));
        }
        Ok(Output::command(CommandTag::Deallocate))
    }

    /// Forgets every named statement (DEALLOCATE ALL, DISCARD ALL).
    pub(crate) fn deallocate_all(&mut self) {
        self.named_statements.statements.clear();
    }

    /// Whether the session has the named statement `name` (the unnamed one, "", always
    /// counts). The server asks before it runs a protocol statement it still holds, since
    /// DEALLOCATE and DISCARD ALL end them here.
    pub fn has_named_statement(&self, name: &str) -> bool {
        name.is_empty() || self.named_statements.statements.contains_key(name)
    }

    /// Records a statement the extended protocol's Parse named (42P05 if the name is
    /// taken, as PostgreSQL's Parse of a name in use).
    pub fn register_protocol_statement(&mut self, name: &str, prepared: &Prepared) -> Result<()> {
        if name.is_empty() {
            return Ok(());
        }
        if self.named_statements.statements.contains_key(name) {
            return Err(already_exists(name));
        }
        let named = NamedStatement { prepared: prepared.clone(), from_sql: false };
        self.named_statements.statements.insert(name.to_string(), named);
        Ok(())
    }

    /// Forgets a statement the extended protocol closed.
    pub fn forget_protocol_statement(&mut self, name: &str) {
        let from_protocol =
            self.named_statements.statements.get(name).is_some_and(|named| !named.from_sql);
        if from_protocol {
            self.named_statements.statements.remove(name);
        }
    }
}
