//! SET, SHOW and the session's settings.

use super::*;
use crate::output::CommandTag;
use crate::sizes::format_memory;

/// PostgreSQL's bounds of work_mem: 64 kB to 2147483647 kB.
const WORK_MEM_MIN_BYTES: u64 = 64 << 10;
const WORK_MEM_MAX_BYTES: u64 = 2_147_483_647 << 10;
/// PostgreSQL 15's lower bound of maintenance_work_mem: 1024 kB (its upper bound is
/// work_mem's).
const MAINTENANCE_WORK_MEM_MIN_BYTES: u64 = 1024 << 10;

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
            _ => {
                self.settings.insert(name.into(), value);
            }
        }
        Ok(())
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
            name if TIMEOUT_SETTINGS.contains(&name) => "0".into(),
            _ => return None,
        })
    }

    pub(crate) fn show(&mut self, variable: &[ast::Ident]) -> Result<Output> {
        let name =
            variable.iter().map(|part| part.value.to_lowercase()).collect::<Vec<_>>().join(" ");
        let (name, key) = match name.as_str() {
            "transaction isolation level" => {
                ("transaction_isolation".to_string(), "transaction_isolation".to_string())
            }
            "time zone" => ("TimeZone".to_string(), "timezone".to_string()),
            "timezone" => ("TimeZone".to_string(), "timezone".to_string()),
            // A qualified name (an extension's setting) arrives as two identifiers.
            "hnsw ef_search" => ("hnsw.ef_search".to_string(), "hnsw.ef_search".to_string()),
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
        let value = self.setting(&key).ok_or_else(|| {
            SqlError::new("42704", format!("unrecognized configuration parameter \"{name}\""))
        })?;
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
