//! pgvector's `vector` type: text and binary forms, the storage form, comparison and the
//! dimension checks, with pgvector's SQLSTATEs and messages.
//!
//! Storage: a column of type vector stores an engine `Value::Bytes` of the elements as
//! little-endian `f32`s, 4 bytes each (the dimension count is the length / 4); the catalog
//! holds the column's type, so no tag is needed. The wire's binary form is pgvector's
//! `vector_send`: int16 dimensions, int16 unused (0), then big-endian float4s.

use super::*;
pub use tierdb_vector::VECTOR_DIMENSIONS_MAX;

/// pg_type OID of `vector` in tierdb. PostgreSQL assigns an extension's type an OID at
/// CREATE EXTENSION; tierdb's types are built in, so it uses fixed OIDs from the range
/// PostgreSQL leaves unassigned for development (8000-9999): drivers look the type up by
/// name (`register_vector`), so only stability matters.
pub const VECTOR_OID: u32 = 8400;
/// pg_type OID of `vector[]` (`_vector`).
pub const VECTOR_ARRAY_OID: u32 = 8401;
/// The same OIDs as catalog values (`const` contexts cannot widen with `From`).
pub const VECTOR_OID_I64: i64 = 8400;
pub const VECTOR_ARRAY_OID_I64: i64 = 8401;

/// The elements of a datum of type vector (the binder coerced it).
pub fn vector_elements(datum: &Datum) -> Result<&[f32]> {
    match datum {
        Datum::Vector(elements) => Ok(elements),
        other => Err(SqlError::internal(format!("a vector value was expected, not {other:?}"))),
    }
}

/// pgvector's order: element by element, then the shorter vector first.
pub fn compare_vectors(a: &[f32], b: &[f32]) -> Ordering {
    for (left, right) in a.iter().zip(b) {
        if left < right {
            return Ordering::Less;
        }
        if left > right {
            return Ordering::Greater;
        }
    }
    a.len().cmp(&b.len())
}

/// pgvector's `CheckDim`: 1 to `VECTOR_DIMENSIONS_MAX` elements.
pub fn check_vector_dimensions(dimensions: usize) -> Result<()> {
    check_dimensions("vector", dimensions)
}

/// `CheckDim` of the dense type `name` (vector and halfvec share the limit and wording).
pub(super) fn check_dimensions(name: &str, dimensions: usize) -> Result<()> {
    if dimensions < 1 {
        return Err(SqlError::new("22000", format!("{name} must have at least 1 dimension")));
    }
    if dimensions > VECTOR_DIMENSIONS_MAX {
        return Err(SqlError::new(
            "54000",
            format!("{name} cannot have more than {VECTOR_DIMENSIONS_MAX} dimensions"),
        ));
    }
    Ok(())
}

/// pgvector's `CheckExpectedDim`: a typmod of `Some(n)` requires n elements.
pub fn check_expected_dimensions(typmod: Option<u32>, dimensions: usize) -> Result<()> {
    match typmod {
        Some(expected) if usize::try_from(expected).ok() != Some(dimensions) => {
            Err(SqlError::new("22000", format!("expected {expected} dimensions, not {dimensions}")))
        }
        _ => Ok(()),
    }
}

/// pgvector's `CheckDims` for a binary operation.
pub fn check_same_dimensions(a: &[f32], b: &[f32]) -> Result<()> {
    check_same_lengths("vector", a.len(), b.len())
}

/// `CheckDims` of the type `name` over operands of `a` and `b` elements.
pub(super) fn check_same_lengths(name: &str, a: usize, b: usize) -> Result<()> {
    if a != b {
        return Err(SqlError::new("22000", format!("different {name} dimensions {a} and {b}")));
    }
    Ok(())
}

/// pgvector's `CheckElement`: no NaN, no infinity.
pub fn check_vector_element(value: f32) -> Result<()> {
    if value.is_nan() {
        return Err(SqlError::new("22000", "NaN not allowed in vector"));
    }
    if value.is_infinite() {
        return Err(SqlError::new("22000", "infinite value not allowed in vector"));
    }
    Ok(())
}

/// A vector datum from elements, checked as pgvector checks a new value.
pub fn vector_datum(elements: Vec<f32>, typmod: Option<u32>) -> Result<Datum> {
    check_vector_dimensions(elements.len())?;
    check_expected_dimensions(typmod, elements.len())?;
    for element in &elements {
        check_vector_element(*element)?;
    }
    Ok(Datum::Vector(elements.into()))
}

/// pgvector's whitespace (`vector_isspace`).
fn is_vector_space(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

fn invalid_text(name: &str, text: &str) -> SqlError {
    SqlError::new("22P02", format!("invalid input syntax for type {name}: \"{text}\""))
}

/// One element's text as `strtof` reads it; `None` when it is not a number (22P02). The
/// flag says whether the text spells infinity (then an infinite value is no range error).
pub(super) fn read_float4(token: &str) -> Option<(f32, bool)> {
    let value: f32 = token.parse().ok()?;
    let unsigned = token.trim_start_matches(['+', '-']).to_ascii_lowercase();
    Some((value, unsigned == "inf" || unsigned == "infinity"))
}

/// One vector element, with pgvector's range error and `CheckElement`.
fn parse_vector_element(token: &str, text: &str) -> Result<f32> {
    let (value, spelled_infinite) =
        read_float4(token).ok_or_else(|| invalid_text("vector", text))?;
    if value.is_infinite() && !spelled_infinite {
        return Err(SqlError::new("22003", format!("\"{token}\" is out of range for type vector")));
    }
    check_vector_element(value)?;
    Ok(value)
}

/// pgvector's `vector_in`: `[1,2,3]` with optional whitespace around every part.
pub fn parse_vector(text: &str, typmod: Option<u32>) -> Result<Datum> {
    let elements = parse_dense("vector", text, |token| parse_vector_element(token, text))?;
    check_expected_dimensions(typmod, elements.len())?;
    Ok(Datum::Vector(elements.into()))
}

/// The bracketed list of `vector_in` and `halfvec_in` (type `name`), each element read by
/// `element`; the dimension count is not checked against a typmod here.
pub(super) fn parse_dense<T>(
    name: &str,
    text: &str,
    element: impl Fn(&str) -> Result<T>,
) -> Result<Vec<T>> {
    let body = text.trim_start_matches(is_vector_space);
    let Some(mut rest) = body.strip_prefix('[') else {
        return Err(invalid_text(name, text));
    };
    if rest.trim_start_matches(is_vector_space).starts_with(']') {
        return Err(SqlError::new("22000", format!("{name} must have at least 1 dimension")));
    }
    let mut elements = Vec::new();
    loop {
        if elements.len() == VECTOR_DIMENSIONS_MAX {
            return Err(SqlError::new(
                "54000",
                format!("{name} cannot have more than {VECTOR_DIMENSIONS_MAX} dimensions"),
            ));
        }
        rest = rest.trim_start_matches(is_vector_space);
        let end = rest.find(|c: char| c == ',' || c == ']' || is_vector_space(c));
        let (token, after) = rest.split_at(end.unwrap_or(rest.len()));
        if token.is_empty() {
            return Err(invalid_text(name, text));
        }
        elements.push(element(token)?);
        rest = after.trim_start_matches(is_vector_space);
        if let Some(after_comma) = rest.strip_prefix(',') {
            rest = after_comma;
        } else if let Some(after_bracket) = rest.strip_prefix(']') {
            rest = after_bracket;
            break;
        } else {
            return Err(invalid_text(name, text));
        }
    }
    if !rest.trim_start_matches(is_vector_space).is_empty() {
        return Err(invalid_text(name, text));
    }
    Ok(elements)
}

/// pgvector's `vector_out`: shortest round-trip float4 text of each element.
pub fn format_vector(elements: &[f32]) -> String {
    let mut text = String::with_capacity(2 + elements.len() * 8);
    text.push('[');
    for (index, element) in elements.iter().enumerate() {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&format_float4(f64::from(*element)));
    }
    text.push(']');
    text
}

/// The storage form (module comment).
pub fn vector_storage_bytes(elements: &[f32]) -> Vec<u8> {
    elements.iter().flat_map(|element| element.to_le_bytes()).collect()
}

/// A vector from its storage form; the engine returns what `vector_storage_bytes` wrote.
pub fn vector_from_storage(bytes: &[u8]) -> Datum {
    debug_assert_eq!(bytes.len() % 4, 0, "a stored vector is whole f32s");
    let elements: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes(chunk.try_into().expect("chunks of 4")))
        .collect();
    Datum::Vector(elements.into())
}

/// pgvector's `vector_send`.
pub fn vector_send(elements: &[f32]) -> Vec<u8> {
    let dimensions = u16::try_from(elements.len()).expect("at most 16,000 dimensions");
    let mut out = Vec::with_capacity(4 + elements.len() * 4);
    out.extend_from_slice(&dimensions.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    for element in elements {
        out.extend_from_slice(&element.to_be_bytes());
    }
    out
}

/// pgvector's `vector_recv`, with its checks and messages.
pub fn vector_receive(bytes: &[u8], typmod: Option<u32>) -> Result<Datum> {
    let body = dense_receive_body("vector", bytes, typmod, 4)?;
    let elements: Vec<f32> = body
        .chunks_exact(4)
        .map(|chunk| f32::from_be_bytes(chunk.try_into().expect("chunks of 4")))
        .collect();
    vector_datum(elements, typmod)
}

/// The header checks of `vector_recv` and `halfvec_recv` (type `name`, elements of
/// `element_bytes`): the element bytes after the header, exactly as many as declared.
pub(super) fn dense_receive_body<'bytes>(
    name: &str,
    bytes: &'bytes [u8],
    typmod: Option<u32>,
    element_bytes: usize,
) -> Result<&'bytes [u8]> {
    let short = || SqlError::new("08P01", "insufficient data left in message");
    let header = bytes.get(..4).ok_or_else(short)?;
    let dimensions = i16::from_be_bytes([header[0], header[1]]);
    let unused = i16::from_be_bytes([header[2], header[3]]);
    let count = usize::try_from(dimensions).unwrap_or(0);
    check_dimensions(name, count)?;
    check_expected_dimensions(typmod, count)?;
    if unused != 0 {
        return Err(SqlError::new("22000", format!("expected unused to be 0, not {unused}")));
    }
    let body = &bytes[4..];
    if body.len() < count * element_bytes {
        return Err(short());
    }
    if body.len() > count * element_bytes {
        return Err(SqlError::new("22P03", "incorrect binary data format in bind parameter"));
    }
    Ok(body)
}

/// The dimension count of a declared `vector(n)`, checked as pgvector's `vector_typmod_in`.
pub fn vector_typmod(modifiers: &[String]) -> Result<Option<u32>> {
    typmod_dimensions("vector", modifiers, VECTOR_DIMENSIONS_MAX)
}

/// `vector_typmod_in`, `halfvec_typmod_in` and `sparsevec_typmod_in` (type `name`, at most
/// `maximum` dimensions).
pub(super) fn typmod_dimensions(
    name: &str,
    modifiers: &[String],
    maximum: usize,
) -> Result<Option<u32>> {
    match modifiers {
        [] => Ok(None),
        [text] => {
            let dimensions: i64 =
                text.trim().parse().map_err(|_| SqlError::new("22023", "invalid type modifier"))?;
            if dimensions < 1 {
                return Err(SqlError::new(
                    "22023",
                    format!("dimensions for type {name} must be at least 1"),
                ));
            }
            if dimensions > i64::try_from(maximum).unwrap_or(i64::MAX) {
                return Err(SqlError::new(
                    "22023",
                    format!("dimensions for type {name} cannot exceed {maximum}"),
                ));
            }
            Ok(Some(u32::try_from(dimensions).expect("checked above")))
        }
        _ => Err(SqlError::new("22023", "invalid type modifier")),
    }
}

/// The elements `subvector(v, start, count)` keeps of a value of `dimensions` elements:
/// 1-based, clipped to the value like substring; none left is pgvector's 22000.
pub fn subvector_range(
    name: &str,
    dimensions: usize,
    start: i64,
    count: i64,
) -> Result<std::ops::Range<usize>> {
    // Both are int4 (the binder coerced them), so the sum cannot overflow i64.
    let end = start + count;
    let dimensions = i64::try_from(dimensions).map_err(|_| SqlError::internal("vector length"))?;
    let start = start.max(1);
    let end = end.min(dimensions + 1);
    if end <= start {
        return Err(SqlError::new("22000", format!("{name} must have at least 1 dimension")));
    }
    let from = usize::try_from(start - 1).map_err(|_| SqlError::internal("checked start"))?;
    let to = usize::try_from(end - 1).map_err(|_| SqlError::internal("checked end"))?;
    Ok(from..to)
}

/// One step of pgvector's `sum(vector)` (`vector_add` as its state function): float sums,
/// every value with the first one's dimensions.
pub fn vector_sum_step(state: &mut Option<Vec<f32>>, value: &[f32]) -> Result<()> {
    match state {
        None => *state = Some(value.to_vec()),
        Some(sums) => {
            check_same_dimensions(sums, value)?;
            for (sum, element) in sums.iter_mut().zip(value) {
                *sum += element;
            }
            if sums.iter().any(|sum| sum.is_infinite()) {
                return Err(SqlError::new("22003", "value out of range: overflow"));
            }
        }
    }
    Ok(())
}

/// One step of pgvector's `avg(vector)` (`vector_accum`): double sums and a count.
pub fn vector_average_step(state: &mut Option<Vec<f64>>, value: &[f32]) -> Result<()> {
    match state {
        None => *state = Some(value.iter().map(|element| f64::from(*element)).collect()),
        Some(sums) => {
            check_expected_dimensions(u32::try_from(sums.len()).ok(), value.len())?;
            for (sum, element) in sums.iter_mut().zip(value) {
                *sum += f64::from(*element);
                if sum.is_infinite() {
                    return Err(SqlError::new("22003", "value out of range: overflow"));
                }
            }
        }
    }
    Ok(())
}

/// pgvector's `vector_avg`: each double sum divided by the count, stored as float.
pub fn vector_average_finish(sums: &[f64], count: i64) -> Result<Datum> {
    // Row counts are far below 2^53: the conversion is exact.
    #[allow(clippy::cast_precision_loss)]
    let count = count as f64;
    #[allow(clippy::cast_possible_truncation)]
    let elements: Vec<f32> = sums.iter().map(|sum| (sum / count) as f32).collect();
    vector_datum(elements, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<f32>> {
        parse_vector(text, None).map(|datum| vector_elements(&datum).expect("vector").to_vec())
    }

    #[test]
    fn text_forms_as_pgvector_reads_and_prints_them() {
        assert_eq!(parsed(" [ 1 , 2.5,-3e2 ] ").unwrap(), vec![1.0, 2.5, -300.0]);
        assert_eq!(format_vector(&[1e-7, 1.5, 1e8, 0.1]), "[1e-07,1.5,1e+08,0.1]");
        assert_eq!(parsed("[1,2").unwrap_err().sqlstate, "22P02");
        assert_eq!(parsed("1,2]").unwrap_err().sqlstate, "22P02");
        assert_eq!(parsed("[1,2] x").unwrap_err().sqlstate, "22P02");
        assert_eq!(parsed("[]").unwrap_err().message, "vector must have at least 1 dimension");
        assert_eq!(parsed("[nan]").unwrap_err().message, "NaN not allowed in vector");
        assert_eq!(parsed("[-inf]").unwrap_err().message, "infinite value not allowed in vector");
        assert_eq!(parsed("[1e39]").unwrap_err().sqlstate, "22003");
        let error = parse_vector("[1,2]", Some(3)).unwrap_err();
        assert_eq!(
            (error.sqlstate, error.message.as_str()),
            ("22000", "expected 3 dimensions, not 2")
        );
    }

    #[test]
    fn binary_form_is_pgvector_send() {
        let bytes = vector_send(&[1.0, -2.0]);
        assert_eq!(bytes, [0, 2, 0, 0, 0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0]);
        let back = vector_receive(&bytes, None).unwrap();
        assert_eq!(vector_elements(&back).unwrap(), &[1.0, -2.0]);
        assert_eq!(vector_receive(&bytes, Some(3)).unwrap_err().sqlstate, "22000");
        assert_eq!(
            vector_receive(&[0, 1, 0, 0, 0x7f, 0xc0, 0, 0], None).unwrap_err().message,
            "NaN not allowed in vector"
        );
        let stored = vector_storage_bytes(&[0.5, 3.0]);
        assert_eq!(vector_elements(&vector_from_storage(&stored)).unwrap(), &[0.5, 3.0]);
    }

    #[test]
    fn order_is_element_wise_then_length() {
        assert_eq!(compare_vectors(&[1.0, 2.0], &[1.0, 3.0]), Ordering::Less);
        assert_eq!(compare_vectors(&[2.0], &[1.0, 3.0]), Ordering::Greater);
        assert_eq!(compare_vectors(&[1.0], &[1.0, 0.0]), Ordering::Less);
        assert_eq!(compare_vectors(&[0.0], &[-0.0]), Ordering::Equal);
    }
}
