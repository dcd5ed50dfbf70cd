//! SET, SHOW and the session's settings.

use super::*;
use crate::output::CommandTag;
use crate::sizes::format_memory;
use crate::system::{SessionSettings, SettingChange};
use tierdb_storage::capacity::Capacity;
use tierdb_vector::hnsw::{self, IterativeScan, ScanOptions};
use tierdb_vector::ivfflat;

/// pgvector's default of `hnsw.scan_mem_multiplier` (a scan's memory: work_mem times it).
const SCAN_MEM_MULTIPLIER_DEFAULT: f64 = 1.0;

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
            ast::Set::SingleAssignment { scope, variable, values, .. } => {
                let local = matches!(scope, Some(ast::ContextModifier::Local));
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
                let value = match values.as_slice() {
                    [value] if is_default(value) => None,
                    _ => Some(values.iter().map(setting_text).collect::<Vec<_>>().join(", ")),
                };
                if local {
                    self.apply_local_setting(&name, value.as_deref())?;
                } else {
                    self.apply_session_setting(&name, value.as_deref())?;
                }
                Ok(Output::command(CommandTag::Set))
            }
            ast::Set::SetTimeZone { local, value } => {
                // SET TIME ZONE LOCAL / DEFAULT: the default zone (PostgreSQL's RESET).
                let value = match value {
                    ast::Expr::Identifier(word)
                        if word.quote_style.is_none()
                            && ["local", "default"]
                                .iter()
                                .any(|name| word.value.eq_ignore_ascii_case(name)) =>
                    {
                        None
                    }
                    value => Some(setting_text(value)),
                };
                if *local {
                    self.apply_local_setting("timezone", value.as_deref())?;
                } else {
                    self.apply_session_setting("timezone", value.as_deref())?;
                }
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

    /// Makes the session's TimeZone the one this thread's statements read and write
    /// timestamptz in (types/zone.rs); cheap when it is already.
    pub(crate) fn install_time_zone(&self) {
        let name = self.settings.get("timezone").map_or("UTC", String::as_str);
        types::install_session_zone_named(name);
    }

    /// SET (SESSION) `name` = `value`, or to its default when `value` is None. In a block
    /// it also becomes what an earlier SET LOCAL of the name returns to at COMMIT.
    fn apply_session_setting(&mut self, name: &str, value: Option<&str>) -> Result<()> {
        self.set_or_reset(name, value)?;
        let key = stored_name(name);
        if let Some(restored) = self.local_restore.get_mut(key) {
            *restored = self.settings.get(key).cloned();
        }
        Ok(())
    }

    /// SET `name` to `value`, or back to its default when `value` is None.
    fn set_or_reset(&mut self, name: &str, value: Option<&str>) -> Result<()> {
        match value {
            Some(value) => self.apply_setting(name, value),
            None => self.reset_setting(name),
        }
    }

    /// SET LOCAL: until the open block ends. Outside a block the value is checked, then
    /// PostgreSQL's WARNING and no effect (the statement's own transaction ends at once).
    fn apply_local_setting(&mut self, name: &str, value: Option<&str>) -> Result<()> {
        if self.state == BlockState::Idle {
            if let Some(value) = value {
                check_setting(name, value, self.is_superuser())?;
            }
            self.warn(SqlError::new("25P01", "SET LOCAL can only be used in transaction blocks"));
            return Ok(());
        }
        let key = stored_name(name);
        let before = self.settings.get(key).cloned();
        self.set_or_reset(name, value)?;
        self.local_restore.entry(key.to_string()).or_insert(before);
        Ok(())
    }

    /// set_config's changes from a statement that succeeded. A local change in autocommit
    /// ends with the statement's own transaction, so it has no effect after it.
    pub(crate) fn apply_setting_changes(&mut self, changes: Vec<SettingChange>) -> Result<()> {
        for change in changes {
            if !change.local {
                self.apply_session_setting(&change.name, change.value.as_deref())?;
            } else if self.state != BlockState::Idle {
                self.apply_local_setting(&change.name, change.value.as_deref())?;
            }
        }
        Ok(())
    }

    /// At the end of a block: a committed one returns SET LOCAL's settings to their session
    /// values; a rolled back one has restored every setting already.
    pub(crate) fn end_local_settings(&mut self, committed: bool) {
        for (name, value) in self.local_restore.drain() {
            if !committed {
                continue;
            }
            match value {
                Some(value) => self.settings.insert(name, value),
                None => self.settings.remove(&name),
            };
        }
    }

    pub(crate) fn apply_setting(&mut self, name: &str, value: &str) -> Result<()> {
        match check_setting(name, value, self.is_superuser())? {
            Checked::Store(name, value) => {
                if name == "temp_buffers" {
                    self.check_temp_buffers_unused(&value)?;
                }
                // Names in prepared statements resolve against the path, and their
                // timestamptz constants were read in the zone: bind them anew.
                let path_changed = name == "search_path" || name == "timezone";
                self.settings.insert(name, value);
                if path_changed {
                    self.catalog.invalidate_plans();
                }
                self.install_time_zone();
            }
            Checked::Capacity(value) => self.set_capacity_bound(name, &value)?,
            Checked::Isolation(level) => self.block_isolation = Some(level),
            Checked::ReadOnly(read_only) => {
                if self.state != BlockState::Idle {
                    self.block_read_only = Some(read_only);
                }
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
        if name == "all" || name == "search_path" || name == "timezone" {
            self.catalog.invalidate_plans();
        }
        self.install_time_zone();
        Ok(())
    }

    /// pgvector's HNSW scan settings (each stored only once checked): `hnsw.ef_search`,
    /// `hnsw.iterative_scan`, `hnsw.max_scan_tuples`, and the scan's memory bound
    /// `work_mem` × `hnsw.scan_mem_multiplier`.
    ///
    /// With pgvector's ivfflat scan settings: `ivfflat.probes`, `ivfflat.iterative_scan`,
    /// `ivfflat.max_probes`.
    pub(crate) fn vector_scan_options(&self) -> tierdb_engine::NearestOptions {
        let number = |name: &str, default: usize| {
            self.settings.get(name).map_or(default, |value| value.parse().expect("checked"))
        };
        let ivfflat = ivfflat::ScanOptions {
            probes: number("ivfflat.probes", ivfflat::PROBES_DEFAULT),
            iterative: match self.settings.get("ivfflat.iterative_scan").map(String::as_str) {
                Some("relaxed_order") => ivfflat::IterativeScan::RelaxedOrder,
                _ => ivfflat::IterativeScan::Off,
            },
            max_probes: number("ivfflat.max_probes", ivfflat::MAX_PROBES_DEFAULT),
        };
        tierdb_engine::NearestOptions { hnsw: self.hnsw_scan_options(), ivfflat }
    }

    fn hnsw_scan_options(&self) -> ScanOptions {
        let number = |name: &str, default: usize| {
            self.settings.get(name).map_or(default, |value| value.parse().expect("checked"))
        };
        let multiplier = self
            .settings
            .get("hnsw.scan_mem_multiplier")
            .map_or(SCAN_MEM_MULTIPLIER_DEFAULT, |value| value.parse().expect("checked"));
        ScanOptions {
            ef_search: number("hnsw.ef_search", hnsw::EF_SEARCH_DEFAULT),
            iterative: match self.settings.get("hnsw.iterative_scan").map(String::as_str) {
                Some("relaxed_order") => IterativeScan::RelaxedOrder,
                Some("strict_order") => IterativeScan::StrictOrder,
                _ => IterativeScan::Off,
            },
            max_scan_tuples: number("hnsw.max_scan_tuples", hnsw::MAX_SCAN_TUPLES_DEFAULT),
            memory_bytes_max: crate::convert::scale_bytes(self.work_mem_bytes(), multiplier),
        }
    }

    pub(crate) fn setting(&self, name: &str) -> Option<String> {
        self.settings_view(self.is_superuser()).current(name)
    }

    /// The settings as a statement sees them (`SessionInfo::settings`).
    pub(crate) fn settings_view(&self, superuser: bool) -> SettingsView<'_> {
        settings_view!(self, superuser)
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

/// The session's settings, borrowed field by field so that a statement can read them while
/// it holds the session's transaction (`SessionInfo::settings`).
pub(crate) struct SettingsView<'a> {
    pub(super) map: &'a HashMap<String, String>,
    pub(super) reset_values: &'a HashMap<String, String>,
    pub(super) block_isolation: Option<IsolationLevel>,
    pub(super) block_read_only: Option<bool>,
    pub(super) superuser: bool,
    pub(super) catalog: &'a Catalog,
}

/// Builds a `SettingsView` from a session's fields (not through `&self`, which the
/// statement's mutable borrow of the transaction excludes).
macro_rules! settings_view {
    ($session:expr, $superuser:expr) => {
        super::settings::SettingsView {
            map: &$session.settings,
            reset_values: &$session.reset_values,
            block_isolation: $session.block_isolation,
            block_read_only: $session.block_read_only,
            superuser: $superuser,
            catalog: &$session.catalog,
        }
    };
}
pub(crate) use settings_view;

impl SettingsView<'_> {
    /// A setting's value when the session has not set it: tierdb's own, else PostgreSQL's.
    fn default_value(&self, name: &str) -> Option<String> {
        Some(match name {
            "work_mem" => format_memory(WORK_MEM_DEFAULT_BYTES),
            "maintenance_work_mem" => format_memory(crate::convert::count_u64(
                tierdb_engine::MAINTENANCE_WORK_MEM_DEFAULT_BYTES,
            )),
            "hash_mem_multiplier" => HASH_MEM_MULTIPLIER_DEFAULT.to_string(),
            "hnsw.ef_search" => hnsw::EF_SEARCH_DEFAULT.to_string(),
            "hnsw.iterative_scan" => "off".into(),
            "hnsw.max_scan_tuples" => hnsw::MAX_SCAN_TUPLES_DEFAULT.to_string(),
            "hnsw.scan_mem_multiplier" => SCAN_MEM_MULTIPLIER_DEFAULT.to_string(),
            "ivfflat.probes" => ivfflat::PROBES_DEFAULT.to_string(),
            "ivfflat.iterative_scan" => "off".into(),
            "ivfflat.max_probes" => ivfflat::MAX_PROBES_DEFAULT.to_string(),
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
                isolation_name(self.block_isolation.unwrap_or_else(|| default_isolation(self.map)))
                    .into()
            }
            "default_transaction_isolation" => isolation_name(default_isolation(self.map)).into(),
            "transaction_read_only" => on_off(read_only(self.map, self.block_read_only)).into(),
            "default_transaction_read_only" => "off".into(),
            "lc_collate" | "lc_ctype" => "C".into(),
            "is_superuser" => on_off(self.superuser).into(),
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
}

impl crate::system::SessionSettings for SettingsView<'_> {
    fn current(&self, name: &str) -> Option<String> {
        self.map.get(name).cloned().or_else(|| self.default_value(name))
    }

    fn check(&self, name: &str, value: &str) -> Result<String> {
        Ok(match check_setting(name, value, self.superuser)? {
            Checked::Store(_, value) | Checked::Capacity(value) => value,
            Checked::Isolation(level) => isolation_name(level).into(),
            Checked::ReadOnly(read_only) => on_off(read_only).into(),
        })
    }

    fn rows(&self) -> Vec<crate::system::SettingRow> {
        super::settings_rows::rows(self)
    }

    fn reset_value(&self, name: &str) -> Result<String> {
        if let Some(value) = self.reset_values.get(name) {
            return Ok(value.clone());
        }
        self.default_value(name)
            .or_else(|| self.map.get(name).map(|_| String::new()))
            .ok_or_else(|| parameters::unrecognized(name))
    }
}

pub(super) fn default_isolation(map: &HashMap<String, String>) -> IsolationLevel {
    map.get("default_transaction_isolation")
        .and_then(|text| parse_isolation(text))
        .unwrap_or(IsolationLevel::ReadCommitted)
}

pub(super) fn read_only(map: &HashMap<String, String>, block_read_only: Option<bool>) -> bool {
    block_read_only.unwrap_or_else(|| {
        map.get("default_transaction_read_only").is_some_and(|value| value == "on")
    })
}

/// What SET `name` = `value` does, checked: most settings are stored in the session's map;
/// the transaction's own and the server's capacity bounds go elsewhere.
pub(crate) enum Checked {
    /// Stored under the name, as SHOW prints it.
    Store(String, String),
    /// tierdb.min_capacity / tierdb.max_capacity: the server's, at once (superuser only).
    Capacity(String),
    /// transaction_isolation: the open transaction's level.
    Isolation(IsolationLevel),
    /// transaction_read_only: the open transaction's mode.
    ReadOnly(bool),
}

/// Checks SET `name` = `value` for a session (`superuser` or not), without applying it.
/// The name a setting is stored under (SQL's spelling `time zone` is `timezone`).
fn stored_name(name: &str) -> &str {
    match name {
        "time zone" => "timezone",
        name => name,
    }
}

/// lc_numeric and lc_monetary: to_char and to_number use the C locale's symbols, so only
/// the names of that locale are accepted (another locale is 0A000, never ignored).
fn check_c_locale(name: &str, value: String) -> Result<String> {
    const C_LOCALE_NAMES: [&str; 5] = ["", "c", "posix", "c.utf-8", "c.utf8"];
    if C_LOCALE_NAMES.contains(&value.to_ascii_lowercase().as_str()) {
        return Ok(value);
    }
    Err(SqlError::unsupported(format!(
        "{name} \"{value}\" is not supported: tierdb formats numbers in the C locale only"
    )))
}

pub(crate) fn check_setting(name: &str, value: &str, superuser: bool) -> Result<Checked> {
    let value = value.trim_matches('\'').to_string();
    let store = |value: String| Ok(Checked::Store(name.to_string(), value));
    match name {
        CAPACITY_MIN_SETTING | CAPACITY_MAX_SETTING => Ok(Checked::Capacity(value)),
        "work_mem" => {
            let bytes = check_memory_setting(name, &value, WORK_MEM_MIN_BYTES)?;
            store(format_memory(bytes))
        }
        "maintenance_work_mem" => {
            let bytes = check_memory_setting(name, &value, MAINTENANCE_WORK_MEM_MIN_BYTES)?;
            store(format_memory(bytes))
        }
        "hash_mem_multiplier" => store(check_multiplier(name, &value)?),
        "hnsw.ef_search" => {
            let (low, high) = (hnsw::EF_SEARCH_MIN, hnsw::EF_SEARCH_MAX);
            store(check_integer_setting(name, &value, (low, high))?.to_string())
        }
        "hnsw.max_scan_tuples" => {
            let (low, high) = (hnsw::MAX_SCAN_TUPLES_MIN, hnsw::MAX_SCAN_TUPLES_MAX);
            store(check_integer_setting(name, &value, (low, high))?.to_string())
        }
        "hnsw.iterative_scan" => store(check_enum_setting(name, &value, &HNSW_ITERATIVE)?.into()),
        "ivfflat.iterative_scan" => {
            store(check_enum_setting(name, &value, &IVFFLAT_ITERATIVE)?.into())
        }
        "ivfflat.probes" | "ivfflat.max_probes" => {
            let (low, high) = (ivfflat::PROBES_MIN, ivfflat::PROBES_MAX);
            store(check_integer_setting(name, &value, (low, high))?.to_string())
        }
        "hnsw.scan_mem_multiplier" => store(check_multiplier(name, &value)?),
        "temp_buffers" => store(super::temp_tables::check_temp_buffers(&value)?),
        "temp_file_limit" | "log_temp_files" => {
            store(check_kilobyte_setting(name, &value, superuser)?)
        }
        "role" | "session_authorization" => {
            Err(SqlError::unsupported(format!("setting {name} is not supported")))
        }
        "timezone" | "time zone" => Ok(Checked::Store("timezone".into(), check_time_zone(&value)?)),
        "transaction_isolation" | "transaction isolation level" => {
            Ok(Checked::Isolation(check_isolation("transaction_isolation", &value)?))
        }
        "default_transaction_read_only" => {
            store(on_off(txn_modes::parse_bool_setting(name, &value)?).into())
        }
        "transaction_read_only" => {
            Ok(Checked::ReadOnly(txn_modes::parse_bool_setting(name, &value)?))
        }
        name if TIMEOUT_SETTINGS.contains(&name) => {
            store(format_duration_ms(parse_duration_ms(name, &value)?))
        }
        "default_transaction_isolation" => {
            store(isolation_name(check_isolation(name, &value)?).into())
        }
        "search_path" => store(value),
        "datestyle" => store(check_date_style(&value)?),
        "client_encoding" => store(check_client_encoding(&value)?),
        "extra_float_digits" => store(check_extra_float_digits(&value)?),
        "lc_numeric" | "lc_monetary" => store(check_c_locale(name, value)?),
        _ => store(parameters::check_parameter(name, &value, superuser)?),
    }
}

/// A real multiplier setting of 1 to 1000 (hash_mem_multiplier, pgvector's
/// `hnsw.scan_mem_multiplier`), with PostgreSQL's messages.
fn check_multiplier(name: &str, value: &str) -> Result<String> {
    let factor = value.trim().parse::<f64>().ok().filter(|factor| factor.is_finite());
    let factor = factor.ok_or_else(|| {
        SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""))
    })?;
    if !(1.0..=1000.0).contains(&factor) {
        return Err(SqlError::new(
            "22023",
            format!("{factor} is outside the valid range for parameter \"{name}\" (1 .. 1000)"),
        ));
    }
    Ok(factor.to_string())
}

/// A TimeZone value (a client's startup parameter) as SHOW prints it; 22023 for a zone
/// PostgreSQL would not take.
pub fn time_zone_setting(value: &str) -> Result<String> {
    check_time_zone(value)
}

/// TimeZone: an `INTERVAL '...'` or a number of hours (ISO sign: east of UTC), else a zone
/// name or POSIX form (types/zone.rs). Returns the value as SHOW prints it.
fn check_time_zone(value: &str) -> Result<String> {
    let trimmed = value.trim();
    let lower = trimmed.to_ascii_lowercase();
    // check_setting took the quotes off the value's ends: `INTERVAL '1 day'` lost its last.
    let shown = if lower.starts_with("interval") && !trimmed.ends_with('\'') {
        format!("{trimmed}'")
    } else {
        trimmed.to_string()
    };
    let invalid = || types::invalid_time_zone_setting(&shown);
    if lower.starts_with("interval") {
        let literal = trimmed.split('\'').nth(1).ok_or_else(invalid)?;
        let interval = types::parse_interval(literal).map_err(|_| invalid())?;
        // PostgreSQL's detail says months and days cannot be a zone's offset.
        if interval.months != 0 || interval.days != 0 {
            return Err(invalid());
        }
        let seconds = i32::try_from(interval.micros / 1_000_000).map_err(|_| invalid())?;
        return zone_of_offset(seconds).ok_or_else(invalid);
    }
    if !trimmed.contains(':') {
        if let Ok(hours) = trimmed.parse::<f64>() {
            let seconds = (hours * 3600.0).round();
            let seconds = (seconds.abs() < f64::from(SETTING_ZONE_OFFSET_LIMIT_SECONDS))
                .then(|| format!("{seconds:.0}").parse::<i32>().ok())
                .flatten();
            return seconds.and_then(zone_of_offset).ok_or_else(invalid);
        }
    }
    types::Zone::by_name(trimmed).map(|zone| zone.setting_name()).ok_or_else(invalid)
}

/// PostgreSQL takes a TimeZone offset of up to a week of hours (pg_tzset_offset).
const SETTING_ZONE_OFFSET_LIMIT_SECONDS: i32 = 168 * 3600;

/// The fixed zone `east_seconds` east of UTC as SHOW names it (`<+05:30>-05:30`).
fn zone_of_offset(east_seconds: i32) -> Option<String> {
    (east_seconds.abs() < SETTING_ZONE_OFFSET_LIMIT_SECONDS)
        .then(|| types::Zone::of_iso_offset(east_seconds).setting_name())
}

fn check_isolation(name: &str, value: &str) -> Result<IsolationLevel> {
    txn_modes::parse_isolation(value)?.ok_or_else(|| {
        SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""))
    })
}

/// temp_file_limit and log_temp_files: superuser settings (PostgreSQL's PGC_SUSET) of
/// -1 or a size in kB up to INT_MAX kB. Returns the value as SHOW prints it.
fn check_kilobyte_setting(name: &str, value: &str, superuser: bool) -> Result<String> {
    if !superuser {
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
    /// The TimeZone as SHOW prints it (reported to the client in ParameterStatus).
    pub fn time_zone(&self) -> String {
        self.settings.get("timezone").cloned().unwrap_or_else(|| "UTC".into())
    }

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

/// An integer setting of PostgreSQL (pgvector's `hnsw.ef_search`, `hnsw.max_scan_tuples`)
/// within `low..=high`, with PostgreSQL's messages: a number with a fraction is rounded
/// (half to even, as `rint`), a value beyond int4 or not a number is invalid.
fn check_integer_setting(name: &str, value: &str, (low, high): (usize, usize)) -> Result<usize> {
    let invalid =
        || SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""));
    let text = value.trim();
    let parsed = match text.parse::<i64>() {
        Ok(parsed) => parsed,
        Err(_) => {
            let real =
                text.parse::<f64>().ok().filter(|real| real.is_finite()).ok_or_else(invalid)?;
            let rounded = real.round_ties_even();
            if rounded.abs() > f64::from(i32::MAX) {
                return Err(invalid());
            }
            // Within int4 (checked just above): exact.
            #[allow(clippy::cast_possible_truncation)]
            let rounded = rounded as i64;
            rounded
        }
    };
    if i32::try_from(parsed).is_err() {
        return Err(invalid());
    }
    usize::try_from(parsed).ok().filter(|parsed| (low..=high).contains(parsed)).ok_or_else(|| {
        SqlError::new(
            "22023",
            format!(
                "{parsed} is outside the valid range for parameter \"{name}\" ({low} .. {high})"
            ),
        )
    })
}

/// pgvector's `hnsw.iterative_scan` values.
const HNSW_ITERATIVE: [&str; 3] = ["off", "relaxed_order", "strict_order"];
/// pgvector's `ivfflat.iterative_scan` values.
const IVFFLAT_ITERATIVE: [&str; 2] = ["off", "relaxed_order"];

/// An enum setting (pgvector's `hnsw.iterative_scan`, `ivfflat.iterative_scan`; PostgreSQL
/// matches its names without regard to case): the value as stored.
fn check_enum_setting(name: &str, value: &str, names: &[&'static str]) -> Result<&'static str> {
    names.iter().copied().find(|known| known.eq_ignore_ascii_case(value.trim())).ok_or_else(|| {
        SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""))
    })
}
