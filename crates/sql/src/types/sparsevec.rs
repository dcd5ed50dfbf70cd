//! pgvector's `sparsevec` type: a dimension count and the non-zero elements (0-based
//! indices, ascending, with float4 values). Text and binary forms, storage, comparison and
//! the casts with vector, halfvec and arrays, with pgvector's SQLSTATEs and messages.
//!
//! Text: `{1:1.5,3:2}/5` (1-based indices, zeros dropped, any order in, ascending out).
//! Binary (`sparsevec_send`): int32 dimensions, int32 non-zero count, int32 unused (0), the
//! 0-based indices as int32s, then the values as float4s, all big-endian.
//! Storage: an engine `Value::Bytes` of the same fields little-endian, without `unused`.

use super::vector::read_float4;
use super::*;

/// pg_type OID of `sparsevec` (fixed, as `VECTOR_OID`: drivers look the type up by name).
pub const SPARSEVEC_OID: u32 = 8432;
/// pg_type OID of `sparsevec[]` (`_sparsevec`).
pub const SPARSEVEC_ARRAY_OID: u32 = 8433;
pub const SPARSEVEC_OID_I64: i64 = 8432;
pub const SPARSEVEC_ARRAY_OID_I64: i64 = 8433;
/// pgvector's `SPARSEVEC_MAX_DIM`.
pub const SPARSEVEC_DIMENSIONS_MAX: u32 = 1_000_000_000;
/// pgvector's `SPARSEVEC_MAX_NNZ`.
pub const SPARSEVEC_NON_ZERO_MAX: usize = 16_000;

/// A sparsevec value.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseVector {
    pub dimensions: u32,
    /// 0-based, ascending, no duplicates, each below `dimensions`.
    pub indices: Vec<u32>,
    /// Finite and non-zero, one per index.
    pub values: Vec<f32>,
}

impl SparseVector {
    /// The operand form of the distance kernels.
    pub fn slice(&self) -> tierdb_vector::SparseSlice<'_> {
        tierdb_vector::SparseSlice { indices: &self.indices, values: &self.values }
    }

    /// The dense elements (`sparsevec_to_vector`'s layout).
    pub fn dense(&self) -> Vec<f32> {
        let length = usize::try_from(self.dimensions).expect("u32 fits usize");
        let mut elements = vec![0.0f32; length];
        for (index, value) in self.indices.iter().zip(&self.values) {
            elements[usize::try_from(*index).expect("u32 fits usize")] = *value;
        }
        elements
    }

    /// The non-zero elements of dense values (`vector_to_sparsevec`, `array_to_sparsevec`).
    pub fn from_dense(elements: &[f32]) -> SparseVector {
        let dimensions = u32::try_from(elements.len()).expect("checked dimensions fit u32");
        let mut sparse = SparseVector { dimensions, indices: Vec::new(), values: Vec::new() };
        for (index, value) in elements.iter().enumerate() {
            if *value != 0.0 {
                sparse.indices.push(u32::try_from(index).expect("below dimensions"));
                sparse.values.push(*value);
            }
        }
        sparse
    }
}

/// The value of a datum of type sparsevec (the binder coerced it).
pub fn sparsevec_value(datum: &Datum) -> Result<&SparseVector> {
    match datum {
        Datum::SparseVec(value) => Ok(value),
        other => Err(SqlError::internal(format!("a sparsevec value was expected, not {other:?}"))),
    }
}

/// `CheckDim` for sparsevec.
pub fn check_sparsevec_dimensions(dimensions: i64) -> Result<u32> {
    if dimensions < 1 {
        return Err(SqlError::new("22000", "sparsevec must have at least 1 dimension"));
    }
    if dimensions > i64::from(SPARSEVEC_DIMENSIONS_MAX) {
        return Err(SqlError::new(
            "54000",
            format!("sparsevec cannot have more than {SPARSEVEC_DIMENSIONS_MAX} dimensions"),
        ));
    }
    Ok(u32::try_from(dimensions).expect("checked above"))
}

/// `CheckDims` for a binary sparsevec operation.
pub fn check_same_sparsevec_dimensions(a: &SparseVector, b: &SparseVector) -> Result<()> {
    if a.dimensions != b.dimensions {
        return Err(SqlError::new(
            "22000",
            format!("different sparsevec dimensions {} and {}", a.dimensions, b.dimensions),
        ));
    }
    Ok(())
}

/// `CheckElement` for sparsevec.
fn check_sparsevec_element(value: f32) -> Result<()> {
    if value.is_nan() {
        return Err(SqlError::new("22000", "NaN not allowed in sparsevec"));
    }
    if value.is_infinite() {
        return Err(SqlError::new("22000", "infinite value not allowed in sparsevec"));
    }
    Ok(())
}

/// `CheckIndex` over sorted indices (`index` a 0-based index as read, possibly negative).
fn check_sparsevec_indices(indices: &[i64], dimensions: u32) -> Result<()> {
    for (position, index) in indices.iter().enumerate() {
        if *index < 0 || *index >= i64::from(dimensions) {
            return Err(SqlError::new("22000", "sparsevec index out of bounds"));
        }
        if position > 0 {
            let previous = indices[position - 1];
            if *index < previous {
                return Err(SqlError::new("22000", "sparsevec indices must be in ascending order"));
            }
            if *index == previous {
                return Err(SqlError::new(
                    "22000",
                    "sparsevec indices must not contain duplicates",
                ));
            }
        }
    }
    Ok(())
}

fn is_sparsevec_space(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

fn invalid_sparsevec_text(text: &str) -> SqlError {
    SqlError::new("22P02", format!("invalid input syntax for type sparsevec: \"{text}\""))
}

/// An integer as `strtol` reads it, clamped to int's range as pgvector clamps it.
fn read_long(token: &str) -> Option<i64> {
    let digits = token.strip_prefix(['+', '-']).unwrap_or(token);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let clamp = |value: i64| value.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    Some(token.parse::<i64>().map_or_else(
        |_| if token.starts_with('-') { i64::from(i32::MIN) } else { i64::from(i32::MAX) },
        clamp,
    ))
}

/// One value as `strtof` reads it, with float4in's range errors (an underflow to zero too).
fn parse_sparsevec_value(token: &str, text: &str) -> Result<f32> {
    let (value, spelled_infinite) =
        read_float4(token).ok_or_else(|| invalid_sparsevec_text(text))?;
    let mantissa = token.split(['e', 'E']).next().unwrap_or(token);
    let underflow = value == 0.0 && mantissa.bytes().any(|byte| (b'1'..=b'9').contains(&byte));
    if (value.is_infinite() && !spelled_infinite) || underflow {
        return Err(SqlError::new(
            "22003",
            format!("\"{token}\" is out of range for type sparsevec"),
        ));
    }
    check_sparsevec_element(value)?;
    Ok(value)
}

/// The `index:value` pairs between the braces (their text `body`), zeros dropped.
fn parse_sparsevec_elements(body: &str, text: &str) -> Result<Vec<(i64, f32)>> {
    let mut elements = Vec::new();
    if body.trim_matches(is_sparsevec_space).is_empty() {
        return Ok(elements);
    }
    for pair in body.split(',') {
        let Some((index, value)) = pair.split_once(':') else {
            return Err(invalid_sparsevec_text(text));
        };
        let index = read_long(index.trim_matches(is_sparsevec_space))
            .ok_or_else(|| invalid_sparsevec_text(text))?;
        let value = value.trim_matches(is_sparsevec_space);
        if value.is_empty() || value.contains(is_sparsevec_space) {
            return Err(invalid_sparsevec_text(text));
        }
        let value = parse_sparsevec_value(value, text)?;
        if value != 0.0 {
            // 1-based in SQL, 0-based inside.
            elements.push((index - 1, value));
        }
    }
    Ok(elements)
}

/// pgvector's `sparsevec_in`.
pub fn parse_sparsevec(text: &str, typmod: Option<u32>) -> Result<Datum> {
    let commas = text.bytes().filter(|byte| *byte == b',').count();
    if commas + 1 > SPARSEVEC_NON_ZERO_MAX {
        return Err(SqlError::new(
            "54000",
            format!("sparsevec cannot have more than {SPARSEVEC_NON_ZERO_MAX} non-zero elements"),
        ));
    }
    let rest = text.trim_start_matches(is_sparsevec_space);
    let rest = rest.strip_prefix('{').ok_or_else(|| invalid_sparsevec_text(text))?;
    let (body, after) = rest.split_once('}').ok_or_else(|| invalid_sparsevec_text(text))?;
    let mut elements = parse_sparsevec_elements(body, text)?;
    let after = after.trim_start_matches(is_sparsevec_space);
    let dimensions = after.strip_prefix('/').ok_or_else(|| invalid_sparsevec_text(text))?;
    let dimensions = read_long(dimensions.trim_matches(is_sparsevec_space))
        .ok_or_else(|| invalid_sparsevec_text(text))?;
    let dimensions = check_sparsevec_dimensions(dimensions)?;
    check_expected_dimensions(typmod, usize::try_from(dimensions).expect("u32 fits usize"))?;
    elements.sort_by_key(|(index, _)| *index);
    let indices: Vec<i64> = elements.iter().map(|(index, _)| *index).collect();
    check_sparsevec_indices(&indices, dimensions)?;
    Ok(Datum::SparseVec(Arc::new(SparseVector {
        dimensions,
        indices: indices.iter().map(|index| u32::try_from(*index).expect("checked")).collect(),
        values: elements.iter().map(|(_, value)| *value).collect(),
    })))
}

/// pgvector's `sparsevec_out`.
pub fn format_sparsevec(value: &SparseVector) -> String {
    let mut text = String::with_capacity(8 + value.values.len() * 12);
    text.push('{');
    for (position, (index, element)) in value.indices.iter().zip(&value.values).enumerate() {
        if position > 0 {
            text.push(',');
        }
        let _ = write!(text, "{}:{}", u64::from(*index) + 1, format_float4(f64::from(*element)));
    }
    let _ = write!(text, "}}/{}", value.dimensions);
    text
}

/// The storage form (module comment).
pub fn sparsevec_storage_bytes(value: &SparseVector) -> Vec<u8> {
    let count = u32::try_from(value.indices.len()).expect("at most 16,000 elements");
    let mut out = Vec::with_capacity(8 + value.indices.len() * 8);
    out.extend_from_slice(&value.dimensions.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    value.indices.iter().for_each(|index| out.extend_from_slice(&index.to_le_bytes()));
    value.values.iter().for_each(|element| out.extend_from_slice(&element.to_le_bytes()));
    out
}

/// A sparsevec from its storage form; the engine returns what `sparsevec_storage_bytes` wrote.
pub fn sparsevec_from_storage(bytes: &[u8]) -> Datum {
    let word = |position: usize| -> [u8; 4] {
        bytes.get(position * 4..position * 4 + 4).map_or([0; 4], |w| w.try_into().expect("4"))
    };
    let dimensions = u32::from_le_bytes(word(0));
    let count = usize::try_from(u32::from_le_bytes(word(1))).expect("u32 fits usize");
    debug_assert_eq!(bytes.len(), 8 + count * 8, "a stored sparsevec is whole");
    let indices = (0..count).map(|i| u32::from_le_bytes(word(2 + i))).collect();
    let values = (0..count).map(|i| f32::from_le_bytes(word(2 + count + i))).collect();
    Datum::SparseVec(Arc::new(SparseVector { dimensions, indices, values }))
}

/// pgvector's `sparsevec_send`.
pub fn sparsevec_send(value: &SparseVector) -> Vec<u8> {
    let count = u32::try_from(value.indices.len()).expect("at most 16,000 elements");
    let mut out = Vec::with_capacity(12 + value.indices.len() * 8);
    out.extend_from_slice(&value.dimensions.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    value.indices.iter().for_each(|index| out.extend_from_slice(&index.to_be_bytes()));
    value.values.iter().for_each(|element| out.extend_from_slice(&element.to_be_bytes()));
    out
}

/// pgvector's `CheckNnz`.
fn check_non_zero_count(count: i32, dimensions: u32) -> Result<()> {
    if count < 0 {
        return Err(SqlError::new("22000", "sparsevec cannot have negative number of elements"));
    }
    if usize::try_from(count).expect("non-negative") > SPARSEVEC_NON_ZERO_MAX {
        return Err(SqlError::new(
            "54000",
            format!("sparsevec cannot have more than {SPARSEVEC_NON_ZERO_MAX} non-zero elements"),
        ));
    }
    if count.unsigned_abs() > dimensions {
        return Err(SqlError::new("54000", "sparsevec cannot have more elements than dimensions"));
    }
    Ok(())
}

/// pgvector's `sparsevec_recv`, with its checks and messages.
pub fn sparsevec_receive(bytes: &[u8], typmod: Option<u32>) -> Result<Datum> {
    let short = || SqlError::new("08P01", "insufficient data left in message");
    let word = |position: usize| -> Result<[u8; 4]> {
        let slice = bytes.get(position * 4..position * 4 + 4).ok_or_else(short)?;
        Ok(slice.try_into().expect("4 bytes"))
    };
    let dimensions = check_sparsevec_dimensions(i64::from(i32::from_be_bytes(word(0)?)))?;
    let count = i32::from_be_bytes(word(1)?);
    check_non_zero_count(count, dimensions)?;
    check_expected_dimensions(typmod, usize::try_from(dimensions).expect("u32 fits usize"))?;
    let unused = i32::from_be_bytes(word(2)?);
    if unused != 0 {
        return Err(SqlError::new("22000", format!("expected unused to be 0, not {unused}")));
    }
    let count = usize::try_from(count).expect("checked non-negative");
    let mut indices = Vec::with_capacity(count);
    for position in 0..count {
        indices.push(i64::from(i32::from_be_bytes(word(3 + position)?)));
        check_sparsevec_indices(&indices, dimensions)?;
    }
    let mut values = Vec::with_capacity(count);
    for position in 0..count {
        let value = f32::from_be_bytes(word(3 + count + position)?);
        check_sparsevec_element(value)?;
        if value == 0.0 {
            return Err(SqlError::new(
                "22000",
                "binary representation of sparsevec cannot contain zero values",
            ));
        }
        values.push(value);
    }
    if bytes.len() > 12 + count * 8 {
        return Err(SqlError::new("22P03", "incorrect binary data format in bind parameter"));
    }
    let indices = indices.iter().map(|index| u32::try_from(*index).expect("checked")).collect();
    Ok(Datum::SparseVec(Arc::new(SparseVector { dimensions, indices, values })))
}

/// The dimension count of a declared `sparsevec(n)` (`sparsevec_typmod_in`).
pub fn sparsevec_typmod(modifiers: &[String]) -> Result<Option<u32>> {
    let maximum = usize::try_from(SPARSEVEC_DIMENSIONS_MAX).expect("u32 fits usize");
    super::vector::typmod_dimensions("sparsevec", modifiers, maximum)
}

/// A sparsevec from dense float4 elements with a typmod (the casts from vector, halfvec
/// and arrays), its elements checked as pgvector checks them.
pub fn sparsevec_from_floats(elements: &[f32], typmod: Option<u32>) -> Result<Datum> {
    check_sparsevec_dimensions(i64::try_from(elements.len()).unwrap_or(i64::MAX))?;
    check_expected_dimensions(typmod, elements.len())?;
    for element in elements {
        check_sparsevec_element(*element)?;
    }
    Ok(Datum::SparseVec(Arc::new(SparseVector::from_dense(elements))))
}

/// pgvector's `sparsevec_cmp_internal`: by the elements in index order (an element absent
/// on one side is a zero there), then the dimension count.
pub fn compare_sparsevecs(a: &SparseVector, b: &SparseVector) -> Ordering {
    let common = a.indices.len().min(b.indices.len());
    let sign = |value: f32| if value < 0.0 { Ordering::Less } else { Ordering::Greater };
    for position in 0..common {
        let (a_index, b_index) = (a.indices[position], b.indices[position]);
        if a_index < b_index {
            return sign(a.values[position]);
        }
        if a_index > b_index {
            return sign(b.values[position]).reverse();
        }
        let (x, y) = (a.values[position], b.values[position]);
        if x < y {
            return Ordering::Less;
        }
        if x > y {
            return Ordering::Greater;
        }
    }
    if a.indices.len() < b.indices.len() && b.indices[common] < a.dimensions {
        return sign(b.values[common]).reverse();
    }
    if a.indices.len() > b.indices.len() && a.indices[common] < b.dimensions {
        return sign(a.values[common]);
    }
    a.dimensions.cmp(&b.dimensions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<String> {
        parse_sparsevec(text, None).map(|datum| format_sparsevec(sparsevec_value(&datum).unwrap()))
    }

    #[test]
    fn text_forms_as_pgvector_reads_and_prints_them() {
        assert_eq!(parsed(" { 3:2, 1:1.5 ,2:0 } / 5 ").unwrap(), "{1:1.5,3:2}/5");
        assert_eq!(parsed("{}/5").unwrap(), "{}/5");
        assert_eq!(
            parsed("{1:1,1:2}/5").unwrap_err().message,
            "sparsevec indices must not contain duplicates"
        );
        assert_eq!(parsed("{0:1}/5").unwrap_err().message, "sparsevec index out of bounds");
        assert_eq!(parsed("{1:1e-50}/5").unwrap_err().sqlstate, "22003");
        assert_eq!(parsed("{1:1}/0").unwrap_err().sqlstate, "22000");
        assert_eq!(parsed("{1:1}").unwrap_err().sqlstate, "22P02");
    }

    #[test]
    fn binary_form_is_pgvector_send() {
        let datum = parse_sparsevec("{1:1.5,3:2}/5", None).unwrap();
        let bytes = sparsevec_send(sparsevec_value(&datum).unwrap());
        let expected = [0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        assert_eq!(bytes[..20], expected);
        let back = sparsevec_receive(&bytes, None).unwrap();
        assert_eq!(sparsevec_value(&back).unwrap(), sparsevec_value(&datum).unwrap());
        let stored = sparsevec_storage_bytes(sparsevec_value(&datum).unwrap());
        assert_eq!(sparsevec_value(&sparsevec_from_storage(&stored)).unwrap().indices, [0, 2]);
    }
}
