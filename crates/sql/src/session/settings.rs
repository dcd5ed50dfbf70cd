//! SET, SHOW and the session's settings.

use super::*;
use crate::output::CommandTag;
use crate::sizes::format_memory;
use tierdb_storage::capacity::Capacity;

/// PostgreSQL's bounds of work_mem: 64 kB to 2147483647 kB.
const WORK_MEM_MIN_BYTES: u64 = 64 << 10;
const WORK_MEM_MAX_BYTES: u64 = 2_147_483_647 << 10;
/// PostgreSQL 15's lower bound of maintenance_work_mem: 1024 kB (its upper bound is
/// work_mem's).
const MAINTENANCE_WORK_MEM_MIN_BYTES: u64 = 1024 << 10;
/// The server-wide capacity bounds a superuser may change at run time (design 015).
const CAPACITY_MIN_SETTING: &str = "tierdb.min_capacity";
const CAPACITY_MAX_SETTING: &str = "tierdb.max_capacity";

impl Session {
    pub(crate) fn set(&mut self, set: &ast::Set) -> Result<Output> {
        match set {
            ast::Set::SingleAssignment { variable, values, .. } => {
                let name = variable
                    .0
                    .iter()
                    .map(|part| part.to_string().to_lowercase())
                    .collect::<Vec<_>>()
                    .join(".");
                let is_default = |value: &ast::Expr| {
                    matches!(value, ast::Expr::Identifier(word)
                        if word.quote_style.is_none() && word.value.eq_ignore_ascii_case("default"))
                };
                if let [value] = values.as_slice() {
                    if is_default(value) {
                        self.reset_setting(&name)?;
                        return Ok(Output::command(CommandTag::Set));
                    }
                }
                let value = values.iter().map(setting_text).collect::<Vec<_>>().join(", ");
                self.apply_setting(&name, &value)?;
                Ok(Output::command(CommandTag::Set))
            }
            ast::Set::SetTimeZone { value, .. } => {
                self.apply_setting("timezone", &setting_text(value))?;
                Ok(Output::command(CommandTag::Set))
            }
            ast::Set::SetNames { .. } | ast::Set::SetNamesDefault {} => {
                Ok(Output::command(CommandTag::Set))
            }
            ast::Set::SetTransaction { modes, session, .. } => {
                if let Some(read_only) = txn_modes::read_only_of(modes) {
                    if *session {
                        self.settings.insert(
                            "default_transaction_read_only".into(),
                            on_off(read_only).into(),
                        );
                    } else if self.state != BlockState::Idle {
                        self.block_read_only = Some(read_only);
                    }
                }
                if let Some(level) = txn_modes::isolation_of(modes)? {
                    if *session {
                        self.settings.insert(
                            "default_transaction_isolation".into(),
                            isolation_name(level).into(),
                        );
                    } else {
                        if self.transaction.is_some() {
                            return Err(SqlError::new(
                                "25001",
                                "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                            ));
                        }
                        self.block_isolation = Some(level);
                    }
                }
                Ok(Output::command(CommandTag::Set))
            }
            // Sessions never change role: NONE is the state they are always in.
            ast::Set::SetRole { role_name: None, .. } => Ok(Output::command(CommandTag::Set)),
            ast::Set::SetRole { .. } | ast::Set::SetSessionAuthorization(_) => Err(
                SqlError::unsupported("SET ROLE and SET SESSION AUTHORIZATION are not supported"),
            ),
            _ => Ok(Output::command(CommandTag::Set)),
        }
    }

    pub(crate) fn apply_setting(&mut self, name: &str, value: &str) -> Result<()> {
        let value = value.trim_matches('\'').to_string();
        match name {
            CAPACITY_MIN_SETTING | CAPACITY_MAX_SETTING => self.set_capacity_bound(name, &value)?,
            "work_mem" => {
                let bytes = check_memory_setting(name, &value, WORK_MEM_MIN_BYTES)?;
                self.settings.insert(name.into(), format_memory(bytes));
            }
            "maintenance_work_mem" => {
                let bytes = check_memory_setting(name, &value, MAINTENANCE_WORK_MEM_MIN_BYTES)?;
                self.settings.insert(name.into(), format_memory(bytes));
            }
            "hash_mem_multiplier" => {
                let factor = value.parse::<f64>().ok().filter(|factor| factor.is_finite());
                let factor = factor.ok_or_else(|| {
                    SqlError::new(
                        "22023",
                        format!("invalid value for parameter \"hash_mem_multiplier\": \"{value}\""),
                    )
                })?;
                if !(1.0..=1000.0).contains(&factor) {
                    return Err(SqlError::new("22023", format!("{factor} is outside the valid range for parameter \"hash_mem_multiplier\" (1 .. 1000)")));
                }
                self.settings.insert(name.into(), factor.to_string());
            }
            "hnsw.ef_search" => {
                let searched = check_ef_search(&value)?;
                self.settings.insert(name.into(), searched.to_string());
            }
            "temp_file_limit" | "log_temp_files" => {
                let formatted = self.check_kilobyte_setting(name, &value)?;
                self.settings.insert(name.into(), formatted);
            }
            "role" | "session_authorization" => {
                return Err(SqlError::unsupported(format!("setting {name} is not supported")))
            }
            "timezone" | "time zone" => {
                let upper = value.to_uppercase();
                if !matches!(
                    upper.as_str(),
                    "UTC" | "GMT" | "ETC/UTC" | "Z" | "0" | "+00" | "LOCAL" | "DEFAULT"
                ) {
                    return Err(SqlError::unsupported(format!(
                        "time zone \"{value}\" is not supported (tierdb runs in UTC)"
                    )));
                }
                self.settings.insert("timezone".into(), "UTC".into());
            }
            "transaction_isolation" | "transaction isolation level" => {
                let level = txn_modes::parse_isolation(&value)?.ok_or_else(|| {
                    SqlError::new(
                        "22023",
                        format!(
                            "invalid value for parameter \"transaction_isolation\": \"{value}\""
                        ),
                    )
                })?;
                self.block_isolation = Some(level);
            }
            "default_transaction_read_only" => {
                let read_only = txn_modes::parse_bool_setting(name, &value)?;
                self.settings.insert(name.into(), on_off(read_only).into());
            }
            "transaction_read_only" => {
                let read_only = txn_modes::parse_bool_setting(name, &value)?;
                if self.state != BlockState::Idle {
                    self.block_read_only = Some(read_only);
                }
            }
            name if TIMEOUT_SETTINGS.contains(&name) => {
                let milliseconds = parse_duration_ms(name, &value)?;
                self.settings.insert(name.into(), format_duration_ms(milliseconds));
            }
            "default_transaction_isolation" => {
                let level = txn_modes::parse_isolation(&value)?.ok_or_else(|| SqlError::new("22023", format!("invalid value for parameter \"default_transaction_isolation\": \"{value}\"")))?;
                self.settings.insert(name.into(), isolation_name(level).into());
            }
            "search_path" => {
                self.settings.insert(name.into(), value);
                // Names in prepared statements resolve against the path: bind them anew.
                self.catalog.invalidate_plans();
            }
            "datestyle" => {
                self.settings.insert(name.into(), check_date_style(&value)?);
            }
            "client_encoding" => {
                self.settings.insert(name.into(), check_client_encoding(&value)?);
            }
            "extra_float_digits" => {
                self.settings.insert(name.into(), check_extra_float_digits(&value)?);
            }
            _ => {
                let stored = parameters::check_parameter(name, &value, self.is_superuser())?;
                self.settings.insert(name.into(), stored);
            }
        }
        Ok(())
    }

    /// tierdb.min_capacity / tierdb.max_capacity: server-wide at once (design 015), by a
    /// superuser; not kept in the session (SHOW reads the server's value).
    fn set_capacity_bound(&self, name: &str, value: &str) -> Result<()> {
        if !self.is_superuser() {
            return Err(SqlError::new(
                "42501",
                format!("permission denied to set parameter \"{name}\""),
            ));
        }
        let capacity = Capacity::parse(value).map_err(|_| {
            SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""))
        })?;
        let control = self.catalog.engine().store().capacity();
        if !control.status().enabled {
            return Err(SqlError::new(
                "55000",
                format!("parameter \"{name}\" cannot be changed: capacity is fixed (start the server with max_capacity)"),
            ));
        }
        let (min, max) = match name {
            CAPACITY_MIN_SETTING => (Some(capacity), None),
            _ => (None, Some(capacity)),
        };
        control.set_bounds(min, max).map_err(|detail| {
            SqlError::new(
                "22023",
                format!("invalid value for parameter \"{name}\": \"{value}\" ({detail})"),
            )
        })
    }

    /// temp_file_limit and log_temp_files: superuser settings (PostgreSQL's PGC_SUSET) of
    /// -1 or a size in kB up to INT_MAX kB. Returns the value as SHOW prints it.
    fn check_kilobyte_setting(&self, name: &str, value: &str) -> Result<String> {
        if !self.is_superuser() {
            return Err(SqlError::new(
                "42501",
                format!("permission denied to set parameter \"{name}\""),
            ));
        }
        if value.trim() == "-1" {
            return Ok("-1".into());
        }
        let bytes = parse_size_bytes(value, SizeSyntax::SETTING).ok_or_else(|| {
            SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""))
        })?;
        if bytes > WORK_MEM_MAX_BYTES {
            return Err(SqlError::new(
                "22023",
                format!(
                    "{} kB is outside the valid range for parameter \"{name}\" (-1 .. 2147483647)",
                    bytes / 1024
                ),
            ));
        }
        Ok(if bytes == 0 { "0".into() } else { format_memory(bytes) })
    }

    /// RESET name / RESET ALL / SET name TO DEFAULT: back to the default (42704 for a
    /// name that is neither tierdb's nor PostgreSQL's nor a custom one that was set).
    pub(crate) fn reset_setting(&mut self, name: &str) -> Result<()> {
        let name = name.to_lowercase();
        if name == "all" {
            self.settings.clone_from(&self.reset_values);
        } else if self.settings.remove(&name).is_none() && self.setting(&name).is_none() {
            return Err(parameters::unrecognized(&name));
        } else if let Some(value) = self.reset_values.get(&name) {
            self.settings.insert(name.clone(), value.clone());
        }
        if name == "all" || name == "search_path" {
            self.catalog.invalidate_plans();
        }
        Ok(())
    }

    /// `hnsw.ef_search` as a number (stored only once checked by `check_ef_search`).
    pub(crate) fn hnsw_ef_search(&self) -> usize {
        self.settings
            .get("hnsw.ef_search")
            .and_then(|value| value.parse().ok())
            .unwrap_or(tierdb_vector::hnsw::EF_SEARCH_DEFAULT)
    }

    pub(crate) fn setting(&self, name: &str) -> Option<String> {
        if let Some(value) = self.settings.get(name) {
            return Some(value.clone());
        }
        Some(match name {
            "work_mem" => format_memory(WORK_MEM_DEFAULT_BYTES),
            "maintenance_work_mem" => format_memory(crate::convert::count_u64(
                tierdb_engine::MAINTENANCE_WORK_MEM_DEFAULT_BYTES,
            )),
            "hash_mem_multiplier" => HASH_MEM_MULTIPLIER_DEFAULT.to_string(),
            "hnsw.ef_search" => tierdb_vector::hnsw::EF_SEARCH_DEFAULT.to_string(),
            "temp_file_limit" | "log_temp_files" => "-1".into(),
            "timezone" => "UTC".into(),
            "datestyle" => "ISO, MDY".into(),
            "server_version" => "15.0".into(),
            "server_version_num" => "150000".into(),
            "server_encoding" | "client_encoding" => "UTF8".into(),
            "standard_conforming_strings" => "on".into(),
            "integer_datetimes" => "on".into(),
            "max_connections" => "500".into(),
            "search_path" => "\"$user\", public".into(),
            "transaction_isolation" => {
                isolation_name(self.block_isolation.unwrap_or_else(|| self.default_isolation()))
                    .into()
            }
            "default_transaction_isolation" => isolation_name(self.default_isolation()).into(),
            "transaction_read_only" => on_off(self.read_only()).into(),
            "default_transaction_read_only" => "off".into(),
            "lc_collate" | "lc_ctype" => "C".into(),
            "is_superuser" => on_off(self.is_superuser()).into(),
            "application_name" => String::new(),
            "extra_float_digits" => "1".into(),
            CAPACITY_MIN_SETTING => {
                self.catalog.engine().store().capacity().status().bounds.min.to_string()
            }
            CAPACITY_MAX_SETTING => {
                self.catalog.engine().store().capacity().status().bounds.max.to_string()
            }
            name if TIMEOUT_SETTINGS.contains(&name) => "0".into(),
            _ => return parameters::default_shown(name),
        })
    }

    pub(crate) fn show(&mut self, variable: &[ast::Ident]) -> Result<Output> {
        let parts: Vec<String> = variable.iter().map(|part| part.value.to_lowercase()).collect();
        // Multi-word names are SQL's; any other parts are a dotted custom name (`myapp.x`).
        let spaced = parts.join(" ");
        let name = match spaced.as_str() {
            "transaction isolation level" | "time zone" | "session authorization" => spaced,
            _ => parts.join("."),
        };
        let (name, key) = match name.as_str() {
            "transaction isolation level" => {
                ("transaction_isolation".to_string(), "transaction_isolation".to_string())
            }
            "time zone" => ("TimeZone".to_string(), "timezone".to_string()),
            "timezone" => ("TimeZone".to_string(), "timezone".to_string()),
            other => (other.to_string(), other.to_string()),
        };
        if key == "all" {
            let mut names: Vec<String> = [
                "work_mem",
                "maintenance_work_mem",
                "timezone",
                "datestyle",
                "server_version",
                "client_encoding",
                "transaction_isolation",
                "default_transaction_isolation",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            names.extend(self.settings.keys().cloned());
            names.sort();
            names.dedup();
            let rows = names
                .iter()
                .map(|n| {
                    vec![Datum::Text(n.clone()), Datum::Text(self.setting(n).unwrap_or_default())]
                })
                .collect::<Vec<_>>();
            return Ok(Output::Rows {
                columns: vec![
                    computed_column("name", SqlType::Text),
                    computed_column("setting", SqlType::Text),
                ],
                rows,
                tag: CommandTag::Show,
            });
        }
        let value = self.setting(&key).ok_or_else(|| parameters::unrecognized(&name))?;
        Ok(Output::Rows {
            columns: vec![computed_column(&name, SqlType::Text)],
            rows: vec![vec![Datum::Text(value)]],
            tag: CommandTag::Show,
        })
    }

    // ----- front statements -----
}

/// A memory setting (work_mem, maintenance_work_mem) in bytes: a size within `min_bytes`
/// and 2147483647 kB, else 22023 with PostgreSQL's wording.
fn check_memory_setting(name: &str, value: &str, min_bytes: u64) -> Result<u64> {
    let bytes = parse_size_bytes(value, SizeSyntax::SETTING).ok_or_else(|| {
        SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""))
    })?;
    if !(min_bytes..=WORK_MEM_MAX_BYTES).contains(&bytes) {
        return Err(SqlError::new(
            "22023",
            format!(
                "{} kB is outside the valid range for parameter \"{name}\" ({} .. 2147483647)",
                bytes / 1024,
                min_bytes / 1024
            ),
        ));
    }
    Ok(bytes)
}

impl Session {
    /// How this session's index builds run: maintenance_work_mem, its temp files (with
    /// temp_file_limit and log_temp_files) and its pid for the progress view. The catalog
    /// fills in the table's and the index's OIDs.
    pub(crate) fn index_build_options(&self) -> tierdb_engine::IndexBuildOptions {
        // Applies temp_file_limit and log_temp_files to the session's temp usage.
        let _ = self.memory_budget();
        let stored = self.settings.get("maintenance_work_mem");
        let parsed = stored.and_then(|text| parse_size_bytes(text, SizeSyntax::SETTING));
        debug_assert!(parsed.is_some() || stored.is_none(), "checked when it was SET");
        tierdb_engine::IndexBuildOptions {
            memory_bytes: parsed
                .map_or(tierdb_engine::MAINTENANCE_WORK_MEM_DEFAULT_BYTES, |bytes| {
                    crate::convert::usize_from(bytes)
                }),
            usage: Some(Arc::clone(&self.temp_usage)),
            pid: self.backend_pid,
            relid: 0,
            index_relid: 0,
        }
    }
}

pub(crate) fn setting_text(expr: &ast::Expr) -> String {
    match expr {
        ast::Expr::Value(value) => match &value.value {
            ast::Value::SingleQuotedString(text) => text.clone(),
            other => other.to_string(),
        },
        ast::Expr::Identifier(name) => name.value.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn on_off(value: bool) -> &'static str {
    if value {
        "on"
    } else {
        "off"
    }
}

/// DateStyle: tierdb writes dates as ISO and reads ambiguous ones as MDY, so `ISO`, `MDY`
/// and `ISO, MDY` (any case) are honoured; other styles are 0A000.
fn check_date_style(value: &str) -> Result<String> {
    let parts: Vec<String> = value
        .split(',')
        .map(|part| part.trim().to_uppercase())
        .filter(|part| !part.is_empty())
        .collect();
    if !parts.is_empty() && parts.iter().all(|part| part == "ISO" || part == "MDY") {
        return Ok("ISO, MDY".into());
    }
    Err(SqlError::unsupported(format!(
        "DateStyle \"{value}\" is not supported (tierdb writes dates as ISO, MDY)"
    )))
}

/// client_encoding: tierdb speaks UTF8 only.
fn check_client_encoding(value: &str) -> Result<String> {
    let name = value.trim().to_uppercase().replace(['-', '_'], "");
    if name == "UTF8" || name == "UNICODE" {
        return Ok("UTF8".into());
    }
    Err(SqlError::unsupported(format!(
        "client_encoding \"{value}\" is not supported (tierdb speaks UTF8)"
    )))
}

/// extra_float_digits: 1 to 3 print the shortest exact form, as tierdb always does (as
/// PostgreSQL 12 and later); 0 and below round, which tierdb does not (0A000).
fn check_extra_float_digits(value: &str) -> Result<String> {
    let digits = value.trim().parse::<i32>().map_err(|_| {
        SqlError::new(
            "22023",
            format!("invalid value for parameter \"extra_float_digits\": \"{value}\""),
        )
    })?;
    if !(-15..=3).contains(&digits) {
        return Err(SqlError::new(
            "22023",
            format!("{digits} is outside the valid range for parameter \"extra_float_digits\" (-15 .. 3)"),
        ));
    }
    if digits < 1 {
        return Err(SqlError::unsupported(
            "extra_float_digits below 1 is not supported (tierdb prints floats in their shortest exact form)",
        ));
    }
    Ok(digits.to_string())
}

impl Session {
    /// The startup packet's `options` (libpq's PGOPTIONS): `-c name=value`, `-cname=value`
    /// or `--name=value` each, separated by spaces (a backslash keeps the next character,
    /// so `\ ` is a space in a value), applied as SET would apply them; the caller turns an
    /// error into a FATAL refusal, as PostgreSQL does. Other server switches are 0A000.
    pub fn apply_startup_options(&mut self, options: &str) -> Result<()> {
        let arguments = split_options(options);
        let mut index = 0;
        while index < arguments.len() {
            let argument = &arguments[index];
            let assignment = if argument == "-c" {
                index += 1;
                arguments.get(index).cloned().ok_or_else(|| {
                    SqlError::syntax("invalid command-line argument for server process: -c")
                })?
            } else if let Some(rest) = argument.strip_prefix("--").or(argument.strip_prefix("-c")) {
                rest.to_string()
            } else {
                return Err(SqlError::unsupported(format!(
                    "startup option \"{argument}\" is not supported (only -c name=value)"
                )));
            };
            let Some((name, value)) = assignment.split_once('=') else {
                return Err(SqlError::syntax(format!("-c {assignment} requires a value")));
            };
            let name = name.replace('-', "_").to_lowercase();
            self.apply_setting(&name, value)?;
            self.keep_reset_value(&name);
            index += 1;
        }
        Ok(())
    }
}

/// Splits startup options at unescaped spaces, undoing backslash escapes.
fn split_options(options: &str) -> Vec<String> {
    let mut arguments = Vec::new();
    let mut current = String::new();
    let mut characters = options.chars();
    while let Some(character) = characters.next() {
        match character {
            '\\' => current.extend(characters.next()),
            ' ' | '\t' | '\n' => {
                if !current.is_empty() {
                    arguments.push(std::mem::take(&mut current));
                }
            }
            other => current.push(other),
        }
    }
    if !current.is_empty() {
        arguments.push(current);
    }
    arguments
}

/// pgvector's `hnsw.ef_search`: an integer from 1 to 1000 (PostgreSQL's messages).
fn check_ef_search(value: &str) -> Result<usize> {
    let name = "hnsw.ef_search";
    let parsed = value.trim().parse::<i64>().map_err(|_| {
        SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""))
    })?;
    let (low, high) = (tierdb_vector::hnsw::EF_SEARCH_MIN, tierdb_vector::hnsw::EF_SEARCH_MAX);
    usize::try_from(parsed).ok().filter(|searched| (low..=high).contains(searched)).ok_or_else(
        || {
            SqlError::new(
                "22023",
                format!("{parsed} is outside the valid range for parameter \"{name}\" ({low} .. {high})"),
            )
        },
    )
}
