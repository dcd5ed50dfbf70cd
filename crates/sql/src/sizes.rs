//! Memory sizes in settings and flags: one parser with PostgreSQL's units.

/// How a size is written where it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeSyntax {
    /// The unit of a plain number, in bytes.
    pub plain_unit_bytes: u64,
    /// Whether the one-letter units `k`, `m` and `g` are accepted too.
    pub short_units: bool,
}

impl SizeSyntax {
    /// PostgreSQL's memory settings (`SET work_mem`): a plain number is kB; units B, kB, MB,
    /// GB, TB.
    pub const SETTING: SizeSyntax = SizeSyntax { plain_unit_bytes: 1 << 10, short_units: false };
    /// `tierdb serve`'s size flags, as documented: a plain number is bytes; PostgreSQL's
    /// units and the one-letter `k`, `m`, `g`.
    pub const FLAG: SizeSyntax = SizeSyntax { plain_unit_bytes: 1, short_units: true };
}

/// Parses a size (`64kB`, `4 MB`, `1024`): its bytes, or None when it is not a size or does
/// not fit 64 bits. Units are matched without regard to case, as tierdb always has.
pub fn parse_size_bytes(text: &str, syntax: SizeSyntax) -> Option<u64> {
    let text = text.trim();
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    let number: u64 = text[..digits].parse().ok()?;
    let unit = text[digits..].trim().to_lowercase();
    let factor: u64 = match unit.as_str() {
        "" => syntax.plain_unit_bytes,
        "b" => 1,
        "kb" => 1 << 10,
        "mb" => 1 << 20,
        "gb" => 1 << 30,
        "tb" => 1 << 40,
        "k" if syntax.short_units => 1 << 10,
        "m" if syntax.short_units => 1 << 20,
        "g" if syntax.short_units => 1 << 30,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// Formats bytes as PostgreSQL shows memory settings (the largest exact unit).
pub fn format_memory(bytes: u64) -> String {
    let kilobytes = bytes / 1024;
    if kilobytes > 0 && kilobytes.is_multiple_of(1024 * 1024) {
        format!("{}GB", kilobytes / (1024 * 1024))
    } else if kilobytes > 0 && kilobytes.is_multiple_of(1024) {
        format!("{}MB", kilobytes / 1024)
    } else {
        format!("{kilobytes}kB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_plain_numbers_as_kilobytes() {
        assert_eq!(parse_size_bytes("64", SizeSyntax::SETTING), Some(64 << 10));
        assert_eq!(parse_size_bytes("4MB", SizeSyntax::SETTING), Some(4 << 20));
        assert_eq!(parse_size_bytes("1 GB", SizeSyntax::SETTING), Some(1 << 30));
        assert_eq!(parse_size_bytes("4m", SizeSyntax::SETTING), None, "PostgreSQL refuses 4m");
        assert_eq!(parse_size_bytes("x", SizeSyntax::SETTING), None);
        assert_eq!(parse_size_bytes("99999999999999999999", SizeSyntax::SETTING), None);
        assert_eq!(parse_size_bytes("16777216TB", SizeSyntax::SETTING), None, "past 2^64");
    }

    #[test]
    fn flags_read_plain_numbers_as_bytes_and_short_units() {
        assert_eq!(parse_size_bytes("4096", SizeSyntax::FLAG), Some(4096));
        assert_eq!(parse_size_bytes("64k", SizeSyntax::FLAG), Some(64 << 10));
        assert_eq!(parse_size_bytes("2g", SizeSyntax::FLAG), Some(2 << 30));
        assert_eq!(parse_size_bytes("2GB", SizeSyntax::FLAG), Some(2 << 30));
    }

    #[test]
    fn memory_is_shown_in_its_largest_exact_unit() {
        assert_eq!(format_memory(4 << 20), "4MB");
        assert_eq!(format_memory(1 << 30), "1GB");
        assert_eq!(format_memory(65 << 10), "65kB");
    }
}
