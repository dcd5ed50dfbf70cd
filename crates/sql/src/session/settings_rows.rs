//! pg_settings' rows: each PostgreSQL 15 parameter (pg_parameters.rs) with its details
//! (pg_parameter_details.rs) and the session's value, converted from SHOW's form (`4MB`,
//! `1min`) to the parameter's unit as PostgreSQL's `setting` column shows it (`4096` kB,
//! `60` s).

use super::pg_parameter_details::PG_PARAMETER_DETAILS;
use super::pg_parameters::{ParameterKind, PG_PARAMETERS};
use crate::system::{SessionSettings, SettingRow};

/// Every parameter as the session sees it, in PostgreSQL's order (lower-cased names).
pub(super) fn rows(settings: &dyn SessionSettings) -> Vec<SettingRow> {
    assert_eq!(PG_PARAMETERS.len(), PG_PARAMETER_DETAILS.len(), "one details entry each");
    PG_PARAMETERS
        .iter()
        .zip(PG_PARAMETER_DETAILS)
        .map(|(parameter, details)| {
            let name = parameter.name.to_lowercase();
            let shown = settings.current(&name).unwrap_or_else(|| parameter.shown.to_string());
            let reset = settings.reset_value(&name).unwrap_or_else(|_| parameter.shown.into());
            let source = source(&shown, parameter.shown, details.context);
            SettingRow {
                name: parameter.name,
                setting: in_unit(&shown, details.unit),
                unit: details.unit,
                category: details.category,
                short_description: details.short_description,
                context: details.context,
                kind: kind_name(parameter.kind),
                source,
                minimum: details.minimum,
                maximum: details.maximum,
                enum_values: details.enum_values,
                boot_value: parameter.default,
                reset_value: in_unit(&reset, details.unit),
            }
        })
        .collect()
}

/// pg_settings.source: `default` for the built-in value; a server parameter set otherwise
/// came from tierdb's command line (PostgreSQL's `command line` for `postgres -c`), a
/// session parameter from the session.
fn source(shown: &str, default: &str, context: &str) -> &'static str {
    match context {
        _ if shown == default => "default",
        "internal" => "default",
        "postmaster" | "sighup" => "command line",
        _ => "session",
    }
}

/// pg_settings.vartype.
fn kind_name(kind: ParameterKind) -> &'static str {
    match kind {
        ParameterKind::Bool => "bool",
        ParameterKind::Integer => "integer",
        ParameterKind::Real => "real",
        ParameterKind::Text => "string",
        ParameterKind::Enum => "enum",
    }
}

/// Memory units PostgreSQL prints, in bytes.
const MEMORY_UNITS: [(&str, f64); 6] = [
    ("B", 1.0),
    ("kB", 1024.0),
    ("8kB", 8192.0),
    ("MB", 1_048_576.0),
    ("GB", 1_073_741_824.0),
    ("TB", 1_099_511_627_776.0),
];

/// Time units PostgreSQL prints, in microseconds.
const TIME_UNITS: [(&str, f64); 6] = [
    ("us", 1.0),
    ("ms", 1_000.0),
    ("s", 1_000_000.0),
    ("min", 60_000_000.0),
    ("h", 3_600_000_000.0),
    ("d", 86_400_000_000.0),
];

/// `shown` (SHOW's form, `4MB`) as a count of `unit`s (`4096` for `kB`); a value without a
/// unit suffix, or of a parameter without a unit, is kept as it is.
fn in_unit(shown: &str, unit: &str) -> String {
    let table: &[(&str, f64)] = if MEMORY_UNITS.iter().any(|(name, _)| *name == unit) {
        &MEMORY_UNITS
    } else if TIME_UNITS.iter().any(|(name, _)| *name == unit) {
        &TIME_UNITS
    } else {
        return shown.to_string();
    };
    let split = shown.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(shown.len());
    let (number, suffix) = shown.split_at(split);
    let Ok(number) = number.trim().parse::<f64>() else { return shown.to_string() };
    let scale = |name: &str| table.iter().find(|(unit, _)| *unit == name).map(|(_, size)| *size);
    let (Some(base), Some(from)) =
        (scale(unit), if suffix.is_empty() { scale(unit) } else { scale(suffix) })
    else {
        return shown.to_string();
    };
    let value = number * from / base;
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::in_unit;

    #[test]
    fn shown_values_convert_to_the_parameters_unit() {
        assert_eq!(in_unit("4MB", "kB"), "4096");
        assert_eq!(in_unit("128MB", "8kB"), "16384");
        assert_eq!(in_unit("-1", "kB"), "-1");
        assert_eq!(in_unit("1min", "s"), "60");
        assert_eq!(in_unit("0", "ms"), "0");
        assert_eq!(in_unit("2ms", "ms"), "2");
        assert_eq!(in_unit("1h", "min"), "60");
        assert_eq!(in_unit("on", ""), "on");
        assert_eq!(in_unit("0.5", ""), "0.5");
    }
}
