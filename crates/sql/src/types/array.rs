//! Arrays: PostgreSQL's one-dimensional arrays of the scalar types, and the catalog's
//! `int2vector` / `oidvector` (arrays whose subscripts start at 0, printed space-separated).
//!
//! A value is `Datum::Array`: a lower bound and its elements (NULL elements allowed).
//! Multidimensional arrays are refused with 0A000 wherever one would be made (text input
//! with nested braces, ARRAY[ARRAY[...]]): tierdb never flattens or misreads one.
//!
//! Text form (array_in / array_out): `{1,2,NULL}`, elements quoted when they are empty,
//! spell NULL, or hold a delimiter, brace, quote, backslash or white space; a lower bound
//! other than 1 is printed first: `[0:1]={1,2}`.
//!
//! Storage form: the elements' engine values encoded as one engine row (`encode_row`),
//! preceded by the lower bound:
//!
//! | offset | size | field                                   |
//! |-------:|-----:|-----------------------------------------|
//! | 0      | 4    | lower bound, i32 little-endian          |
//! | 4      | rest | the elements as an engine row           |

use std::cmp::Ordering;
use std::sync::Arc;

use tierdb_engine::{decode_row, encode_row, Value};

use super::{parse_text, Datum, SqlType};
use crate::error::{Result, SqlError};

/// Most elements one array may hold (PostgreSQL's MaxArraySize is about 134 million; a
/// smaller bound keeps one value's memory in reach of work_mem accounting).
pub const ARRAY_ELEMENTS_MAX: usize = 16 * 1024 * 1024;

/// A one-dimensional array value.
#[derive(Clone, Debug)]
pub struct ArrayValue {
    /// The subscript of the first element (1 for arrays made by SQL, 0 for int2vector).
    pub lower: i32,
    pub elements: Vec<Datum>,
}

impl ArrayValue {
    pub fn new(elements: Vec<Datum>) -> ArrayValue {
        ArrayValue { lower: 1, elements }
    }

    /// The subscript of the last element (`lower - 1` when empty, as PostgreSQL reports no
    /// upper bound for an empty array).
    pub fn upper(&self) -> i64 {
        i64::from(self.lower) + i64::try_from(self.elements.len()).unwrap_or(i64::MAX) - 1
    }

    /// The element at `subscript`, None outside the bounds.
    pub fn get(&self, subscript: i64) -> Option<&Datum> {
        let offset = subscript.checked_sub(i64::from(self.lower))?;
        self.elements.get(usize::try_from(offset).ok()?)
    }
}

/// A new array datum of `elements` with lower bound 1.
pub fn array_datum(elements: Vec<Datum>) -> Datum {
    Datum::Array(Arc::new(ArrayValue::new(elements)))
}

/// The array value of a datum the binder typed as an array.
pub fn array_value(datum: &Datum) -> Result<&ArrayValue> {
    match datum {
        Datum::Array(array) => Ok(array),
        other => Err(SqlError::internal(format!("expected an array value, got {other:?}"))),
    }
}

/// PostgreSQL's array type OID for an element type (None: no array type).
pub fn array_type_oid(element: &SqlType) -> Option<u32> {
    Some(match element {
        SqlType::Bool => 1000,
        SqlType::Bytea => 1001,
        SqlType::Name => 1003,
        SqlType::Int2 => 1005,
        SqlType::Int4 => 1007,
        SqlType::Text | SqlType::Unknown => 1009,
        SqlType::Char(_) => 1014,
        SqlType::Varchar(_) => 1015,
        SqlType::Int8 => 1016,
        SqlType::Float4 => 1021,
        SqlType::Float8 => 1022,
        SqlType::Oid => 1028,
        SqlType::Timestamp => 1115,
        SqlType::Date => 1182,
        SqlType::TimestampTz => 1185,
        SqlType::Numeric { .. } => 1231,
        SqlType::Vector(_) => super::VECTOR_ARRAY_OID,
        SqlType::HalfVec(_) => super::HALFVEC_ARRAY_OID,
        SqlType::SparseVec(_) => super::SPARSEVEC_ARRAY_OID,
        SqlType::Json => 199,
        SqlType::Jsonb => 3807,
        SqlType::JsonPath => 4073,
        SqlType::Uuid => super::UUID_ARRAY_OID,
        SqlType::Bit(_) => super::BIT_ARRAY_OID,
        SqlType::VarBit(_) => super::VARBIT_ARRAY_OID,
        SqlType::Interval => super::INTERVAL_ARRAY_OID,
        SqlType::Time => super::TIME_ARRAY_OID,
        SqlType::Object(_)
        | SqlType::Array(_)
        | SqlType::Int2Vector
        | SqlType::OidVector
        | SqlType::Void => return None,
    })
}

/// The element type of an array type OID.
pub fn array_element_of_oid(oid: u32) -> Option<SqlType> {
    let element = match oid {
        1000 => SqlType::Bool,
        1001 => SqlType::Bytea,
        1003 => SqlType::Name,
        1005 => SqlType::Int2,
        1007 => SqlType::Int4,
        1009 => SqlType::Text,
        1014 => SqlType::Char(1),
        1015 => SqlType::Varchar(None),
        1016 => SqlType::Int8,
        1021 => SqlType::Float4,
        1022 => SqlType::Float8,
        1028 => SqlType::Oid,
        1115 => SqlType::Timestamp,
        1182 => SqlType::Date,
        1185 => SqlType::TimestampTz,
        1231 => SqlType::numeric(),
        199 => SqlType::Json,
        super::UUID_ARRAY_OID => SqlType::Uuid,
        super::BIT_ARRAY_OID => SqlType::Bit(None),
        super::VARBIT_ARRAY_OID => SqlType::VarBit(None),
        super::INTERVAL_ARRAY_OID => SqlType::Interval,
        super::TIME_ARRAY_OID => SqlType::Time,
        3807 => SqlType::Jsonb,
        4073 => SqlType::JsonPath,
        _ => return None,
    };
    Some(element)
}

/// The array type of `element` values, refusing arrays of arrays (0A000).
pub fn array_of(element: &SqlType) -> Result<SqlType> {
    match element {
        SqlType::Array(_) | SqlType::Int2Vector | SqlType::OidVector => {
            Err(SqlError::unsupported("multidimensional arrays are not supported"))
        }
        // regclass[] and the like would need the catalog to read their elements.
        SqlType::Object(kind) => {
            Err(SqlError::unsupported(format!("arrays of {} are not supported", kind.type_name())))
        }
        SqlType::Unknown => Ok(SqlType::Array(Box::new(SqlType::Text))),
        other => Ok(SqlType::Array(Box::new(other.clone()))),
    }
}

/// Element-wise order, then length, then lower bound (PostgreSQL's btarraycmp for one
/// dimension). NULL elements sort after non-NULL ones and equal each other.
pub fn compare_arrays(left: &ArrayValue, right: &ArrayValue) -> Ordering {
    for (a, b) in left.elements.iter().zip(&right.elements) {
        let order = a.sort_compare(b, false);
        if order != Ordering::Equal {
            return order;
        }
    }
    left.elements.len().cmp(&right.elements.len()).then(left.lower.cmp(&right.lower))
}

/// Whether array_out quotes an element's text.
fn needs_quotes(text: &str, delimiter: char) -> bool {
    text.is_empty()
        || text.eq_ignore_ascii_case("NULL")
        || text.chars().any(|character| {
            matches!(character, '{' | '}' | '"' | '\\')
                || character == delimiter
                || is_space(character)
        })
}

/// array_isspace: the white space array_in skips and array_out quotes.
fn is_space(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// array_out for one dimension: `{a,"b c",NULL}`, `[0:1]={1,2}` for another lower bound.
pub fn format_array(array: &ArrayValue, element: &SqlType) -> String {
    let mut out = String::new();
    if array.lower != 1 && !array.elements.is_empty() {
        out.push_str(&format!("[{}:{}]=", array.lower, array.upper()));
    }
    out.push('{');
    for (index, datum) in array.elements.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        match datum.to_text(element) {
            None => out.push_str("NULL"),
            Some(text) if needs_quotes(&text, ',') => {
                out.push('"');
                for character in text.chars() {
                    if matches!(character, '"' | '\\') {
                        out.push('\\');
                    }
                    out.push(character);
                }
                out.push('"');
            }
            Some(text) => out.push_str(&text),
        }
    }
    out.push('}');
    out
}

/// int2vector_out / oidvector_out: the elements separated by spaces.
pub fn format_vector_array(array: &ArrayValue) -> String {
    let texts: Vec<String> = array
        .elements
        .iter()
        .map(|datum| datum.to_text(&SqlType::Int8).unwrap_or_default())
        .collect();
    texts.join(" ")
}

fn malformed(text: &str, detail: &str) -> SqlError {
    let _ = detail;
    SqlError::new("22P02", format!("malformed array literal: \"{text}\""))
}

/// array_in for one dimension. `{}` is the empty array; elements go through the element
/// type's input function; unquoted NULL is a NULL element.
pub fn parse_array(text: &str, element: &SqlType) -> Result<Datum> {
    let trimmed = text.trim_matches(is_space);
    let (lower, body) = match trimmed.strip_prefix('[') {
        Some(rest) => parse_bounds(rest, text)?,
        None => (None, trimmed),
    };
    let body = body.trim_start_matches(is_space);
    let Some(inner) = body.strip_prefix('{') else {
        return Err(malformed(text, "Array value must start with \"{\" or dimension information."));
    };
    let items = split_elements(inner, text)?;
    let mut elements = Vec::with_capacity(items.len());
    for item in items {
        elements.push(match item {
            None => Datum::Null,
            Some(item) => parse_text(&item, element)?,
        });
    }
    if elements.len() > ARRAY_ELEMENTS_MAX {
        return Err(array_too_large());
    }
    let array = match lower {
        Some((lower, upper)) => {
            let expected = i64::from(upper) - i64::from(lower) + 1;
            if i64::try_from(elements.len()).ok() != Some(expected) {
                return Err(malformed(
                    text,
                    "Specified array dimensions do not match array contents.",
                ));
            }
            ArrayValue { lower, elements }
        }
        None => ArrayValue::new(elements),
    };
    Ok(Datum::Array(Arc::new(array)))
}

pub(crate) fn array_too_large() -> SqlError {
    SqlError::new("54000", format!("array size exceeds the maximum allowed ({ARRAY_ELEMENTS_MAX})"))
}

/// `[lower:upper]=` before the braces (one dimension).
fn parse_bounds<'t>(rest: &'t str, text: &str) -> Result<(Option<(i32, i32)>, &'t str)> {
    let (bounds, after) = rest.split_once(']').ok_or_else(|| malformed(text, ""))?;
    if after.trim_start_matches(is_space).starts_with('[') {
        return Err(SqlError::unsupported("multidimensional arrays are not supported"));
    }
    let after = after.trim_start_matches(is_space);
    let body = after.strip_prefix('=').ok_or_else(|| malformed(text, ""))?;
    let (lower, upper) = match bounds.split_once(':') {
        Some((lower, upper)) => (lower.trim(), upper.trim()),
        None => ("1", bounds.trim()),
    };
    let lower: i32 = lower.parse().map_err(|_| malformed(text, ""))?;
    let upper: i32 = upper.parse().map_err(|_| malformed(text, ""))?;
    if upper < lower {
        return Err(SqlError::new("2202E", "upper bound cannot be less than lower bound"));
    }
    Ok((Some((lower, upper)), body))
}

/// The elements between `{` and the closing `}`: `None` for an unquoted NULL.
fn split_elements(inner: &str, text: &str) -> Result<Vec<Option<String>>> {
    let mut items = Vec::new();
    let mut characters = inner.chars().peekable();
    // Empty array: only white space before the closing brace.
    let rest: String = inner.chars().skip_while(|character| is_space(*character)).collect();
    if let Some(after) = rest.strip_prefix('}') {
        return finish(after, items, text);
    }
    loop {
        while characters.peek().is_some_and(|character| is_space(*character)) {
            characters.next();
        }
        if characters.peek() == Some(&'{') {
            return Err(SqlError::unsupported("multidimensional arrays are not supported"));
        }
        let mut item = String::new();
        let mut quoted = false;
        // Where the unquoted text ends before trailing white space.
        let mut kept = 0;
        loop {
            let Some(character) = characters.next() else { return Err(malformed(text, "")) };
            match character {
                '"' => {
                    quoted = true;
                    read_quoted(&mut characters, &mut item, text)?;
                    kept = item.len();
                }
                '\\' => {
                    item.push(characters.next().ok_or_else(|| malformed(text, ""))?);
                    kept = item.len();
                }
                ',' | '}' => {
                    item.truncate(kept);
                    let null = !quoted && item.eq_ignore_ascii_case("NULL");
                    if !quoted && item.is_empty() {
                        return Err(malformed(text, "Unexpected \",\" character."));
                    }
                    items.push(if null { None } else { Some(item) });
                    if character == '}' {
                        let rest: String = characters.collect();
                        return finish(&rest, items, text);
                    }
                    break;
                }
                '{' => return Err(malformed(text, "Unexpected \"{\" character.")),
                character if is_space(character) => item.push(character),
                character => {
                    if quoted {
                        return Err(malformed(text, "Incorrectly quoted array element."));
                    }
                    item.push(character);
                    kept = item.len();
                }
            }
        }
    }
}

fn read_quoted(
    characters: &mut std::iter::Peekable<std::str::Chars<'_>>,
    item: &mut String,
    text: &str,
) -> Result<()> {
    loop {
        match characters.next() {
            None => return Err(malformed(text, "Unexpected end of input.")),
            Some('"') => return Ok(()),
            Some('\\') => item.push(characters.next().ok_or_else(|| malformed(text, ""))?),
            Some(character) => item.push(character),
        }
    }
}

/// After the closing brace only white space may follow.
fn finish(rest: &str, items: Vec<Option<String>>, text: &str) -> Result<Vec<Option<String>>> {
    if rest.chars().any(|character| !is_space(character)) {
        return Err(malformed(text, "Junk after closing right brace."));
    }
    Ok(items)
}

/// int2vector_in / oidvector_in: integers separated by white space, subscripts from 0.
pub fn parse_vector_array(text: &str, element: &SqlType) -> Result<Datum> {
    let mut elements = Vec::new();
    for word in text.split(is_space).filter(|word| !word.is_empty()) {
        elements.push(parse_text(word, element)?);
    }
    Ok(Datum::Array(Arc::new(ArrayValue { lower: 0, elements })))
}

/// The storage form (module comment).
pub fn array_storage_bytes(array: &ArrayValue, element: &SqlType) -> Result<Vec<u8>> {
    let mut values = Vec::with_capacity(array.elements.len());
    for datum in &array.elements {
        values.push(datum.to_value(element)?);
    }
    let mut out = Vec::new();
    out.extend_from_slice(&array.lower.to_le_bytes());
    encode_row(&values, &mut out);
    Ok(out)
}

/// An array from its storage form; the engine returns what `array_storage_bytes` wrote.
pub fn array_from_storage(bytes: &[u8], element: &SqlType) -> Datum {
    let (Some(lower), Some(rest)) = (bytes.get(..4), bytes.get(4..)) else {
        debug_assert!(false, "a stored array starts with its lower bound");
        return Datum::Null;
    };
    let lower = i32::from_le_bytes(lower.try_into().expect("four bytes"));
    let values: Vec<Value> = match decode_row(rest) {
        Ok(values) => values,
        Err(error) => {
            debug_assert!(false, "a stored array decodes: {error}");
            return Datum::Null;
        }
    };
    let elements = values.iter().map(|value| Datum::from_value(value, element)).collect();
    Datum::Array(Arc::new(ArrayValue { lower, elements }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_array(text: &str) -> Vec<Option<String>> {
        let Datum::Array(array) = parse_array(text, &SqlType::Text).expect("parses") else {
            panic!("an array")
        };
        array.elements.iter().map(|datum| datum.as_text().map(str::to_string)).collect()
    }

    #[test]
    fn input_handles_quotes_nulls_and_white_space() {
        assert_eq!(text_array("{}"), Vec::<Option<String>>::new());
        assert_eq!(
            text_array(" { a , \"b c\" ,NULL, \"NULL\"} "),
            vec![Some("a".into()), Some("b c".into()), None, Some("NULL".into())]
        );
        assert_eq!(text_array(r#"{"a\"b",c\,d}"#), vec![Some("a\"b".into()), Some("c,d".into())]);
    }

    #[test]
    fn output_quotes_what_input_would_misread() {
        let array = ArrayValue::new(vec![
            Datum::Text("a".into()),
            Datum::Text(String::new()),
            Datum::Text("null".into()),
            Datum::Text("x y".into()),
            Datum::Text("q\"\\".into()),
            Datum::Null,
        ]);
        let text = format_array(&array, &SqlType::Text);
        assert_eq!(text, r#"{a,"","null","x y","q\"\\",NULL}"#);
        let Datum::Array(back) = parse_array(&text, &SqlType::Text).expect("parses") else {
            panic!("an array")
        };
        assert_eq!(compare_arrays(&back, &array), Ordering::Equal);
    }

    #[test]
    fn malformed_and_multidimensional_input_is_refused() {
        assert_eq!(parse_array("1,2", &SqlType::Int4).unwrap_err().sqlstate, "22P02");
        assert_eq!(parse_array("{1,2", &SqlType::Int4).unwrap_err().sqlstate, "22P02");
        assert_eq!(parse_array("{1,,2}", &SqlType::Int4).unwrap_err().sqlstate, "22P02");
        assert_eq!(parse_array("{1}x", &SqlType::Int4).unwrap_err().sqlstate, "22P02");
        assert_eq!(parse_array("{{1},{2}}", &SqlType::Int4).unwrap_err().sqlstate, "0A000");
        assert_eq!(parse_array("{a}", &SqlType::Int4).unwrap_err().sqlstate, "22P02");
    }

    #[test]
    fn bounds_are_read_and_printed() {
        let datum = parse_array("[0:1]={5,6}", &SqlType::Int4).expect("parses");
        let Datum::Array(array) = &datum else { panic!("an array") };
        assert_eq!((array.lower, array.upper()), (0, 1));
        assert_eq!(format_array(array, &SqlType::Int4), "[0:1]={5,6}");
        assert_eq!(parse_array("[1:3]={5,6}", &SqlType::Int4).unwrap_err().sqlstate, "22P02");
    }

    #[test]
    fn storage_round_trips() {
        let array =
            ArrayValue { lower: 0, elements: vec![Datum::Int(3), Datum::Null, Datum::Int(-1)] };
        let bytes = array_storage_bytes(&array, &SqlType::Int2).expect("encodes");
        let Datum::Array(back) = array_from_storage(&bytes, &SqlType::Int2) else {
            panic!("an array")
        };
        assert_eq!(back.lower, 0);
        assert_eq!(compare_arrays(&back, &array), Ordering::Equal);
    }
}
