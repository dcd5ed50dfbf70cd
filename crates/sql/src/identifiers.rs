//! Identifiers as PostgreSQL writes them back (quote_ident, pg_get_indexdef, format_type):
//! quoted unless they read back as themselves unquoted.

/// PostgreSQL's reserved key words, which cannot name a table unquoted (sqlparser accepts
/// some of them there: `SELECT * FROM FROM t`).
pub(crate) const RESERVED_WORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

/// PostgreSQL 15's column-name and type-or-function-name key words (`pg_get_keywords()`
/// categories C and T): names, but not every place takes them unquoted. Sorted.
const NAME_KEYWORDS: [&str; 74] = [
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "char",
    "character",
    "coalesce",
    "collation",
    "concurrently",
    "cross",
    "current_schema",
    "dec",
    "decimal",
    "exists",
    "extract",
    "float",
    "freeze",
    "full",
    "greatest",
    "grouping",
    "ilike",
    "inner",
    "inout",
    "int",
    "integer",
    "interval",
    "is",
    "isnull",
    "join",
    "least",
    "left",
    "like",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "notnull",
    "nullif",
    "numeric",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "position",
    "precision",
    "real",
    "right",
    "row",
    "setof",
    "similar",
    "smallint",
    "substring",
    "tablesample",
    "time",
    "timestamp",
    "treat",
    "trim",
    "values",
    "varchar",
    "verbose",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// `name` as PostgreSQL's quote_identifier writes it: bare when it is lower case letters,
/// digits and `_` (not starting with a digit) and not a key word other than an
/// unreserved one;
/// else in double quotes with any `"` doubled.
pub fn quote_identifier(name: &str) -> String {
    let plain = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED_WORDS.contains(&name)
        && NAME_KEYWORDS.binary_search(&name).is_err();
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_keywords_are_sorted_for_the_binary_search() {
        assert!(NAME_KEYWORDS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn names_are_quoted_as_postgresql_quotes_them() {
        assert_eq!(quote_identifier("orders"), "orders");
        assert_eq!(quote_identifier("order"), "\"order\"");
        assert_eq!(quote_identifier("Order"), "\"Order\"");
        assert_eq!(quote_identifier("a b"), "\"a b\"");
        assert_eq!(quote_identifier("1a"), "\"1a\"");
        assert_eq!(quote_identifier("say\"hi"), "\"say\"\"hi\"");
        // Unreserved keywords read back as names.
        assert_eq!(quote_identifier("name"), "name");
    }
}
