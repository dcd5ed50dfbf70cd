//! pgvector's `halfvec` type: IEEE half-precision elements. Text and binary forms, the
//! storage form, comparison, casts from and to vector and arrays, with pgvector's
//! SQLSTATEs and messages.
//!
//! Storage: a column of type halfvec stores an engine `Value::Bytes` of the elements as
//! little-endian half bit patterns, 2 bytes each (the dimension count is the length / 2).
//! The wire's binary form is pgvector's `halfvec_send`: int16 dimensions, int16 unused (0),
//! then the halves' bit patterns big-endian. The text form prints each half widened to
//! float4 in float4's shortest round-trip digits, as `halfvec_out` does.

use super::vector::{
    check_dimensions, check_same_lengths, dense_receive_body, parse_dense, read_float4,
    typmod_dimensions,
};
use super::*;
pub use tierdb_vector::f16;

/// pg_type OID of `halfvec` (fixed, as `VECTOR_OID`: drivers look the type up by name).
pub const HALFVEC_OID: u32 = 8430;
/// pg_type OID of `halfvec[]` (`_halfvec`).
pub const HALFVEC_ARRAY_OID: u32 = 8431;
pub const HALFVEC_OID_I64: i64 = 8430;
pub const HALFVEC_ARRAY_OID_I64: i64 = 8431;

/// The elements of a datum of type halfvec (the binder coerced it).
pub fn halfvec_elements(datum: &Datum) -> Result<&[f16]> {
    match datum {
        Datum::HalfVec(elements) => Ok(elements),
        other => Err(SqlError::internal(format!("a halfvec value was expected, not {other:?}"))),
    }
}

/// pgvector's `halfvec_cmp_internal`: element by element as float4, then the shorter first.
pub fn compare_halfvecs(a: &[f16], b: &[f16]) -> Ordering {
    for (left, right) in a.iter().zip(b) {
        let (left, right) = (left.to_f32(), right.to_f32());
        if left < right {
            return Ordering::Less;
        }
        if left > right {
            return Ordering::Greater;
        }
    }
    a.len().cmp(&b.len())
}

/// `CheckDims` for a binary halfvec operation.
pub fn check_same_halfvec_dimensions(a: &[f16], b: &[f16]) -> Result<()> {
    check_same_lengths("halfvec", a.len(), b.len())
}

/// `CheckDim` for halfvec.
pub fn check_halfvec_dimensions(dimensions: usize) -> Result<()> {
    check_dimensions("halfvec", dimensions)
}

/// pgvector's `CheckElement` for halfvec: no NaN, no infinity.
pub fn check_halfvec_element(value: f16) -> Result<()> {
    if value.is_nan() {
        return Err(SqlError::new("22000", "NaN not allowed in halfvec"));
    }
    if value.is_infinite() {
        return Err(SqlError::new("22000", "infinite value not allowed in halfvec"));
    }
    Ok(())
}

/// pgvector's `Float4ToHalf`: round to nearest even, a finite float too large for a half is
/// 22003 naming the float.
pub fn float4_to_half(value: f32) -> Result<f16> {
    let half = f16::from_f32(value);
    if half.is_infinite() && !value.is_infinite() {
        return Err(SqlError::new(
            "22003",
            format!("\"{}\" is out of range for type halfvec", format_float4(f64::from(value))),
        ));
    }
    Ok(half)
}

/// The overflow check of halfvec arithmetic (`float_overflow_error`).
pub fn check_halfvec_overflow(elements: &[f16]) -> Result<()> {
    if elements.iter().any(|element| element.is_infinite()) {
        return Err(SqlError::new("22003", "value out of range: overflow"));
    }
    Ok(())
}

/// A halfvec datum from float4 elements, converted and checked as `array_to_halfvec` and
/// `vector_to_halfvec` do.
pub fn halfvec_from_floats(elements: &[f32], typmod: Option<u32>) -> Result<Datum> {
    check_halfvec_dimensions(elements.len())?;
    check_expected_dimensions(typmod, elements.len())?;
    let halves = elements.iter().map(|value| float4_to_half(*value)).collect::<Result<Vec<_>>>()?;
    for half in &halves {
        check_halfvec_element(*half)?;
    }
    Ok(Datum::HalfVec(halves.into()))
}

/// A halfvec datum from halves, checked as pgvector checks a new value.
pub fn halfvec_datum(elements: Vec<f16>, typmod: Option<u32>) -> Result<Datum> {
    check_halfvec_dimensions(elements.len())?;
    check_expected_dimensions(typmod, elements.len())?;
    for element in &elements {
        check_halfvec_element(*element)?;
    }
    Ok(Datum::HalfVec(elements.into()))
}

/// One element of `halfvec_in`: `strtof`, then the half, with the range errors of both.
fn parse_halfvec_element(token: &str, text: &str) -> Result<f16> {
    let (value, spelled_infinite) = read_float4(token).ok_or_else(|| {
        SqlError::new("22P02", format!("invalid input syntax for type halfvec: \"{text}\""))
    })?;
    let half = f16::from_f32(value);
    if (value.is_infinite() || half.is_infinite()) && !spelled_infinite {
        return Err(SqlError::new(
            "22003",
            format!("\"{token}\" is out of range for type halfvec"),
        ));
    }
    check_halfvec_element(half)?;
    Ok(half)
}

/// pgvector's `halfvec_in`.
pub fn parse_halfvec(text: &str, typmod: Option<u32>) -> Result<Datum> {
    let elements = parse_dense("halfvec", text, |token| parse_halfvec_element(token, text))?;
    check_expected_dimensions(typmod, elements.len())?;
    Ok(Datum::HalfVec(elements.into()))
}

/// pgvector's `halfvec_out`.
pub fn format_halfvec(elements: &[f16]) -> String {
    let mut text = String::with_capacity(2 + elements.len() * 6);
    text.push('[');
    for (index, element) in elements.iter().enumerate() {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&format_float4(f64::from(element.to_f32())));
    }
    text.push(']');
    text
}

/// The storage form (module comment).
pub fn halfvec_storage_bytes(elements: &[f16]) -> Vec<u8> {
    elements.iter().flat_map(|element| element.to_bits().to_le_bytes()).collect()
}

/// A halfvec from its storage form; the engine returns what `halfvec_storage_bytes` wrote.
pub fn halfvec_from_storage(bytes: &[u8]) -> Datum {
    debug_assert_eq!(bytes.len() % 2, 0, "a stored halfvec is whole halves");
    let elements: Vec<f16> = bytes
        .chunks_exact(2)
        .map(|chunk| f16::from_bits(u16::from_le_bytes([chunk[0], chunk[1]])))
        .collect();
    Datum::HalfVec(elements.into())
}

/// pgvector's `halfvec_send`.
pub fn halfvec_send(elements: &[f16]) -> Vec<u8> {
    let dimensions = u16::try_from(elements.len()).expect("at most 16,000 dimensions");
    let mut out = Vec::with_capacity(4 + elements.len() * 2);
    out.extend_from_slice(&dimensions.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    for element in elements {
        out.extend_from_slice(&element.to_bits().to_be_bytes());
    }
    out
}

/// pgvector's `halfvec_recv`, with its checks and messages.
pub fn halfvec_receive(bytes: &[u8], typmod: Option<u32>) -> Result<Datum> {
    let body = dense_receive_body("halfvec", bytes, typmod, 2)?;
    let elements: Vec<f16> = body
        .chunks_exact(2)
        .map(|chunk| f16::from_bits(u16::from_be_bytes([chunk[0], chunk[1]])))
        .collect();
    halfvec_datum(elements, typmod)
}

/// The dimension count of a declared `halfvec(n)` (`halfvec_typmod_in`).
pub fn halfvec_typmod(modifiers: &[String]) -> Result<Option<u32>> {
    typmod_dimensions("halfvec", modifiers, VECTOR_DIMENSIONS_MAX)
}

/// The elements widened to float4 (exact).
pub fn halves_to_floats(elements: &[f16]) -> Vec<f32> {
    elements.iter().map(|element| element.to_f32()).collect()
}

/// pgvector's halfvec arithmetic without `FLT16_SUPPORT`: each result computed in float and
/// rounded to a half, then the overflow check.
pub fn halfvec_element_wise(a: &[f16], b: &[f16], operation: fn(f32, f32) -> f32) -> Vec<f16> {
    a.iter().zip(b).map(|(x, y)| f16::from_f32(operation(x.to_f32(), y.to_f32()))).collect()
}

/// One step of pgvector's `sum(halfvec)` (`halfvec_add` as its state function).
pub fn halfvec_sum_step(state: &mut Option<Vec<f16>>, value: &[f16]) -> Result<()> {
    match state {
        None => *state = Some(value.to_vec()),
        Some(sums) => {
            check_same_halfvec_dimensions(sums, value)?;
            let added = halfvec_element_wise(sums, value, |x, y| x + y);
            check_halfvec_overflow(&added)?;
            *sums = added;
        }
    }
    Ok(())
}

/// pgvector's `halfvec_avg`: each double sum divided by the count, rounded to float, then
/// to a half with `Float4ToHalf`'s range error.
pub fn halfvec_average_finish(sums: &[f64], count: i64) -> Result<Datum> {
    // Row counts are far below 2^53: the conversion is exact.
    #[allow(clippy::cast_precision_loss)]
    let count = count as f64;
    #[allow(clippy::cast_possible_truncation)]
    let elements: Vec<f32> = sums.iter().map(|sum| (sum / count) as f32).collect();
    halfvec_from_floats(&elements, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<f32>> {
        parse_halfvec(text, None).map(|datum| halves_to_floats(halfvec_elements(&datum).unwrap()))
    }

    #[test]
    fn text_forms_as_pgvector_reads_and_prints_them() {
        assert_eq!(parsed(" [ 1 , 2.5,-3e2 ] ").unwrap(), vec![1.0, 2.5, -300.0]);
        let datum = parse_halfvec("[0.1,1.001,65504]", None).unwrap();
        let printed = format_halfvec(halfvec_elements(&datum).unwrap());
        assert_eq!(printed, "[0.099975586,1.0009766,65504]");
        assert_eq!(parsed("[65520]").unwrap_err().sqlstate, "22003");
        assert_eq!(parsed("[1e39]").unwrap_err().sqlstate, "22003");
        assert_eq!(parsed("[inf]").unwrap_err().message, "infinite value not allowed in halfvec");
        assert_eq!(parsed("[]").unwrap_err().message, "halfvec must have at least 1 dimension");
        assert_eq!(parsed("[1,").unwrap_err().sqlstate, "22P02");
    }

    #[test]
    fn binary_form_is_pgvector_send() {
        let halves = [f16::from_f32(1.0), f16::from_f32(-2.0)];
        let bytes = halfvec_send(&halves);
        assert_eq!(bytes, [0, 2, 0, 0, 0x3c, 0x00, 0xc0, 0x00]);
        let back = halfvec_receive(&bytes, None).unwrap();
        assert_eq!(halfvec_elements(&back).unwrap(), &halves);
        assert_eq!(halfvec_receive(&bytes[..6], None).unwrap_err().sqlstate, "08P01");
        let stored = halfvec_storage_bytes(&halves);
        assert_eq!(halfvec_elements(&halfvec_from_storage(&stored)).unwrap(), &halves);
    }

    #[test]
    fn conversion_from_float_rounds_and_checks_range() {
        assert_eq!(float4_to_half(65519.0).unwrap().to_f32(), 65504.0);
        let error = float4_to_half(100_000.0).unwrap_err();
        assert_eq!(error.message, "\"100000\" is out of range for type halfvec");
    }
}
