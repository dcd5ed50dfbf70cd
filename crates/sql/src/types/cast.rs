//! Casts between types, and numeric division and powers with PostgreSQL's scales.

use super::*;

/// Casts `datum` (of type `from`) to `to`. `explicit` is true for CAST/`::` (truncating
/// character types) and false for assignment.
pub fn cast(datum: Datum, from: &SqlType, to: &SqlType, explicit: bool) -> Result<Datum> {
    if datum.is_null() {
        return Ok(Datum::Null);
    }
    if from == to && !matches!(to, SqlType::Numeric { precision: Some(_), .. }) {
        return Ok(datum);
    }
    let datum = match (&datum, from) {
        // bpchar loses its padding when it becomes another type.
        (Datum::Text(text), SqlType::Char(_)) if !matches!(to, SqlType::Char(_)) => {
            Datum::Text(text.trim_end_matches(' ').to_string())
        }
        _ => datum,
    };
    if let (Datum::Jsonb(value), SqlType::Jsonb) = (&datum, from) {
        if let Some(result) = jsonb_scalar_cast(value, to) {
            return result;
        }
    }
    // The boolean-to-text cast spells the value out (the output function prints t/f).
    let as_text = |datum: &Datum| match datum {
        Datum::Bool(flag) => if *flag { "true" } else { "false" }.to_string(),
        other => other.to_text(from).unwrap_or_default(),
    };
    Ok(match to {
        // Only an untyped literal becomes void (through void_in); no type casts to it.
        SqlType::Void if *from == SqlType::Unknown => Datum::Text(String::new()),
        SqlType::Void => return Err(cannot_cast(from, to)),
        SqlType::Text | SqlType::Name | SqlType::Unknown => Datum::Text(as_text(&datum)),
        SqlType::Varchar(length) => Datum::Text(to_varchar(&as_text(&datum), *length, explicit)?),
        SqlType::Char(length) => Datum::Text(to_bpchar(&as_text(&datum), *length, explicit)?),
        SqlType::Bool => match &datum {
            Datum::Bool(_) => datum,
            Datum::Text(text) => Datum::Bool(parse_bool(text)?),
            Datum::Int(number) => Datum::Bool(*number != 0),
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid => {
            to_integer(&datum, from, to)?
        }
        SqlType::Float4 | SqlType::Float8 => match &datum {
            Datum::Text(text) => Datum::Float(parse_float(text, to)?),
            Datum::Int(_) | Datum::Float(_) | Datum::Numeric(_) => {
                let value = datum.as_f64().unwrap_or(0.0);
                if *to == SqlType::Float4 {
                    #[allow(clippy::cast_possible_truncation)]
                    let single = value as f32;
                    Datum::Float(f64::from(single))
                } else {
                    Datum::Float(value)
                }
            }
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Numeric { precision, scale } => {
            let value = match &datum {
                Datum::Text(text) => parse_numeric(text)?,
                Datum::Float(number) if !number.is_finite() => {
                    return Err(SqlError::unsupported("numeric NaN and infinity are not supported"))
                }
                Datum::Int(_) | Datum::Numeric(_) | Datum::Float(_) => {
                    datum.as_decimal().ok_or_else(|| SqlError::out_of_range(to.message_name()))?
                }
                _ => return Err(cannot_cast(from, to)),
            };
            Datum::Numeric(apply_numeric_typmod(value, *precision, *scale)?)
        }
        SqlType::Bytea => match &datum {
            Datum::Bytes(_) => datum,
            Datum::Text(text) => Datum::Bytes(parse_bytea(text)?),
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Date => match &datum {
            Datum::Date(_) => datum,
            Datum::Text(text) => Datum::Date(parse_date(text)?),
            Datum::Timestamp(micros) | Datum::TimestampTz(micros)
                if super::infinite_date_of(*micros).is_some() =>
            {
                Datum::Date(super::infinite_date_of(*micros).expect("infinite"))
            }
            Datum::Timestamp(micros) | Datum::TimestampTz(micros) => {
                // A timestamptz's date is the one in the session zone.
                let micros = match &datum {
                    Datum::TimestampTz(utc) => super::utc_to_session_local(*utc),
                    _ => *micros,
                };
                // i64 microseconds span ±106,751,991 days: always an i32 day number.
                let days = i32::try_from(micros.div_euclid(MICROSECONDS_PER_DAY));
                debug_assert!(days.is_ok(), "a timestamp's day fits i32");
                Datum::Date(days.unwrap_or(if micros < 0 { i32::MIN } else { i32::MAX }))
            }
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Timestamp | SqlType::TimestampTz => cast_to_timestamp(&datum, from, to)?,
        SqlType::Vector(_) | SqlType::HalfVec(_) | SqlType::SparseVec(_) => {
            cast_to_pgvector(datum, from, to)?
        }
        SqlType::Array(_) if matches!(datum, Datum::HalfVec(_) | Datum::Vector(_)) => {
            pgvector_to_float4_array(&datum, from, to)?
        }
        SqlType::Array(_) | SqlType::Int2Vector | SqlType::OidVector => {
            cast_to_array(datum, from, to, explicit)?
        }
        SqlType::Json | SqlType::Jsonb | SqlType::JsonPath | SqlType::Uuid => {
            cast_from_text_input(datum, from, to)?
        }
        SqlType::Bit(_) | SqlType::VarBit(_) => cast_to_bit_type(&datum, from, to, explicit)?,
        SqlType::Interval | SqlType::Time => cast_to_interval_or_time(datum, from, to)?,
        // Resolving a name or an oid takes the catalog: the executor casts to these
        // (`system::objects`), and the binder never folds such a cast.
        SqlType::Object(_) => match &datum {
            Datum::Object(_) if from == to => datum,
            _ => {
                return Err(SqlError::internal(
                    "a cast to an object identifier type needs the catalog",
                ))
            }
        },
    })
}

/// A cast to an integer type (or oid): floats round half to even, numerics half away from
/// zero, as PostgreSQL's casts do; the type's range is checked.
fn to_integer(datum: &Datum, from: &SqlType, to: &SqlType) -> Result<Datum> {
    Ok(match datum {
        Datum::Int(number) => Datum::Int(to.check_integer(*number)?),
        Datum::Float(number) => {
            let rounded = number.round_ties_even();
            if !rounded.is_finite() || rounded.abs() > 9.2e18 {
                return Err(SqlError::out_of_range(to.message_name()));
            }
            let value = Decimal::from_f64(rounded)
                .and_then(|decimal| decimal.to_i64())
                .ok_or_else(|| SqlError::out_of_range(to.message_name()))?;
            Datum::Int(to.check_integer(value)?)
        }
        Datum::Numeric(decimal) => {
            let rounded = decimal.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
            let value =
                rounded.to_i64().ok_or_else(|| SqlError::out_of_range(to.message_name()))?;
            Datum::Int(to.check_integer(value)?)
        }
        Datum::Text(text) => Datum::Int(parse_integer(text, to)?),
        Datum::Object(object) => Datum::Int(to.check_integer(i64::from(object.oid))?),
        Datum::Bool(flag) if *to == SqlType::Int4 => Datum::Int(i64::from(*flag)),
        // bittoint4 and bittoint8 (PostgreSQL has no bit to smallint cast).
        Datum::Bit(bits)
            if matches!(from, SqlType::Bit(_)) && matches!(to, SqlType::Int4 | SqlType::Int8) =>
        {
            let width = if *to == SqlType::Int4 { 32 } else { 64 };
            Datum::Int(bit_to_integer(bits, width, to.message_name())?)
        }
        _ => return Err(cannot_cast(from, to)),
    })
}

/// Casts to vector(n), halfvec(n) and sparsevec(n) as pgvector defines them: to the same
/// type checks the dimension count; vector -> halfvec -> sparsevec are implicit, back and
/// from integer / real / double precision / numeric arrays (to each of the three)
/// assignment casts.
fn cast_to_pgvector(datum: Datum, from: &SqlType, to: &SqlType) -> Result<Datum> {
    let length = |dimensions: u32| usize::try_from(dimensions).unwrap_or(usize::MAX);
    match (to, &datum) {
        (_, Datum::Text(text)) => parse_text(text, to),
        (SqlType::Vector(typmod), Datum::Vector(_))
        | (SqlType::HalfVec(typmod), Datum::HalfVec(_))
        | (SqlType::SparseVec(typmod), Datum::SparseVec(_)) => {
            check_expected_dimensions(*typmod, dimensions_of(&datum))?;
            Ok(datum)
        }
        (SqlType::Vector(typmod), Datum::HalfVec(elements)) => {
            vector_datum(halves_to_floats(elements), *typmod)
        }
        (SqlType::Vector(typmod), Datum::SparseVec(value)) => {
            check_vector_dimensions(length(value.dimensions))?;
            vector_datum(value.dense(), *typmod)
        }
        (SqlType::Vector(typmod), Datum::Array(array)) => {
            vector_datum(array_float4s(array, from, to)?, *typmod)
        }
        (SqlType::HalfVec(typmod), Datum::Vector(elements)) => {
            halfvec_from_floats(elements, *typmod)
        }
        (SqlType::HalfVec(typmod), Datum::SparseVec(value)) => {
            check_halfvec_dimensions(length(value.dimensions))?;
            halfvec_from_floats(&value.dense(), *typmod)
        }
        (SqlType::HalfVec(typmod), Datum::Array(array)) => {
            halfvec_from_floats(&array_float4s(array, from, to)?, *typmod)
        }
        (SqlType::SparseVec(typmod), Datum::Vector(elements)) => {
            sparsevec_from_floats(elements, *typmod)
        }
        (SqlType::SparseVec(typmod), Datum::HalfVec(elements)) => {
            sparsevec_from_floats(&halves_to_floats(elements), *typmod)
        }
        (SqlType::SparseVec(typmod), Datum::Array(array)) => {
            sparsevec_from_floats(&array_float4s(array, from, to)?, *typmod)
        }
        _ => Err(cannot_cast(from, to)),
    }
}

/// The dimension count of a vector, halfvec or sparsevec datum (0 for other values).
fn dimensions_of(datum: &Datum) -> usize {
    match datum {
        Datum::Vector(elements) => elements.len(),
        Datum::HalfVec(elements) => elements.len(),
        Datum::SparseVec(value) => usize::try_from(value.dimensions).unwrap_or(usize::MAX),
        _ => 0,
    }
}

/// The elements of a numeric array as pgvector's `array_to_*` reads them: each narrowed to
/// float4 (C's conversion); a NULL element is 22004; other element types have no cast.
fn array_float4s(array: &ArrayValue, from: &SqlType, to: &SqlType) -> Result<Vec<f32>> {
    let element = from.array_element().unwrap_or(&SqlType::Unknown);
    if !element.is_numeric_family() {
        return Err(cannot_cast(from, to));
    }
    array
        .elements
        .iter()
        .map(|element| match element.as_f64() {
            #[allow(clippy::cast_possible_truncation)]
            Some(value) => Ok(value as f32),
            None => Err(SqlError::new("22004", "array must not contain nulls")),
        })
        .collect()
}

/// pgvector's `vector_to_float4` (an implicit cast) and `halfvec_to_float4` (the halves
/// widened; an assignment cast): the elements in a real[].
fn pgvector_to_float4_array(datum: &Datum, from: &SqlType, to: &SqlType) -> Result<Datum> {
    if to.array_element() != Some(&SqlType::Float4) {
        return Err(cannot_cast(from, to));
    }
    let elements = match datum {
        Datum::Vector(elements) => {
            elements.iter().map(|element| Datum::Float(f64::from(*element))).collect()
        }
        _ => halfvec_elements(datum)?
            .iter()
            .map(|element| Datum::Float(f64::from(element.to_f32())))
            .collect(),
    };
    Ok(Datum::Array(Arc::new(ArrayValue { lower: 1, elements })))
}

/// Casts to an array type: text through the input function, arrays element by element
/// (the bounds kept, as PostgreSQL's array_map keeps them).
fn cast_to_array(datum: Datum, from: &SqlType, to: &SqlType, explicit: bool) -> Result<Datum> {
    let element = to.array_element().expect("an array type");
    match (&datum, from.array_element()) {
        (Datum::Text(text), _) => parse_text(text, to),
        (Datum::Array(array), Some(from_element)) => {
            let mut elements = Vec::with_capacity(array.elements.len());
            for item in &array.elements {
                elements.push(cast(item.clone(), from_element, element, explicit)?);
            }
            Ok(Datum::Array(Arc::new(ArrayValue { lower: array.lower, elements })))
        }
        _ => Err(cannot_cast(from, to)),
    }
}

pub(crate) fn cannot_cast(from: &SqlType, to: &SqlType) -> SqlError {
    SqlError::new(
        "42846",
        format!("cannot cast type {} to {}", from.display_name(), to.display_name()),
    )
}

/// Base-10000 weight of a decimal's first non-zero digit group (PostgreSQL's numeric layout).
pub(crate) fn numeric_weight(value: &Decimal) -> (i64, u32) {
    text_weight(&value.abs().normalize().to_string())
}

/// `numeric_weight` of `mantissa` x 10^-scale, a value wider than a decimal holds.
pub(crate) fn scaled_integer_weight(mantissa: u128, scale: u32) -> (i64, u32) {
    let digits = mantissa.to_string();
    let scale = usize::try_from(scale).expect("a scale fits usize");
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (integer, fraction) = padded.split_at(padded.len() - scale);
    text_weight(&format!("{integer}.{fraction}"))
}

/// `numeric_weight` of a non-negative value's text.
fn text_weight(text: &str) -> (i64, u32) {
    let (integer, fraction) = text.split_once('.').unwrap_or((text, ""));
    let integer = integer.trim_start_matches('0');
    if !integer.is_empty() {
        let groups = integer.len().div_ceil(4);
        let first_len = integer.len() - (groups - 1) * 4;
        let first: u32 = integer[..first_len].parse().unwrap_or(0);
        return (digit_groups(groups - 1), first);
    }
    // Fraction groups of 4 digits; weight -1 is the first group after the point.
    let mut padded = fraction.to_string();
    while padded.len() % 4 != 0 {
        padded.push('0');
    }
    for (index, chunk) in padded.as_bytes().chunks(4).enumerate() {
        let group: u32 = std::str::from_utf8(chunk).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
        if group != 0 {
            return (-1 - digit_groups(index), group);
        }
    }
    (0, 0)
}

/// A count of a decimal's digit groups as i64: a decimal's text has at most a few dozen
/// digits.
fn digit_groups(count: usize) -> i64 {
    i64::try_from(count).expect("a decimal has fewer than 100 digit groups")
}

/// PostgreSQL's result scale for numeric division (select_div_scale): at least 16
/// significant digits and no less than either input's scale.
pub fn division_scale(left: &Decimal, right: &Decimal) -> u32 {
    division_scale_of(numeric_weight(left), left.scale(), numeric_weight(right), right.scale())
}

/// `division_scale` of operands given by their `numeric_weight` and scale.
pub(crate) fn division_scale_of(
    (weight1, first1): (i64, u32),
    left_scale: u32,
    (weight2, first2): (i64, u32),
    right_scale: u32,
) -> u32 {
    let mut quotient_weight = weight1 - weight2;
    if first1 <= first2 {
        quotient_weight -= 1;
    }
    let scale = 16 - quotient_weight * 4;
    let scale = scale.max(i64::from(left_scale)).max(i64::from(right_scale)).clamp(0, 1000);
    u32::try_from(scale).expect("clamped to 0..=1000")
}

/// Numeric division with PostgreSQL's result scale (capped by the 28-digit decimal).
pub fn numeric_divide(left: Decimal, right: Decimal) -> Result<Decimal> {
    if right.is_zero() {
        return Err(SqlError::division_by_zero());
    }
    let scale = division_scale(&left, &right);
    let quotient = left.checked_div(right).ok_or_else(|| SqlError::out_of_range("numeric"))?;
    let mut rounded =
        quotient.round_dp_with_strategy(scale.min(28), RoundingStrategy::MidpointAwayFromZero);
    rounded.rescale(scale.min(28));
    Ok(rounded)
}

/// numeric ^ numeric with PostgreSQL's errors and result scale: at least 16 significant
/// digits (`NUMERIC_MIN_SIG_DIGITS` less the result's decimal weight for a fractional
/// exponent, 16 decimals for an integer one) and no less than either input's scale.
pub fn numeric_power(base: Decimal, exponent: Decimal) -> Result<Decimal> {
    use rust_decimal::MathematicalOps;
    let overflow = || SqlError::new("22003", "value overflows numeric format");
    if base.is_zero() && exponent.is_sign_negative() && !exponent.is_zero() {
        return Err(SqlError::new("2201F", "zero raised to a negative power is undefined"));
    }
    let integral = exponent.fract().is_zero();
    if base.is_sign_negative() && !base.is_zero() && !integral {
        return Err(SqlError::new(
            "2201F",
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let result = if exponent.is_zero() {
        Decimal::ONE
    } else if base.is_zero() {
        Decimal::ZERO
    } else if integral {
        let power = exponent.trunc().to_i64().ok_or_else(overflow)?;
        base.checked_powi(power).ok_or_else(overflow)?
    } else {
        base.checked_ln()
            .and_then(|ln| ln.checked_mul(exponent))
            .and_then(|product| product.checked_exp())
            .ok_or_else(overflow)?
    };
    let weight = if integral || result.is_zero() {
        0
    } else {
        // (int) of the decimal logarithm, truncated toward zero as C does.
        let log10 = result.abs().to_f64().map_or(0.0, f64::log10);
        #[allow(clippy::cast_possible_truncation)]
        let weight = log10.trunc() as i64;
        weight
    };
    let scale =
        (16 - weight).max(i64::from(base.scale())).max(i64::from(exponent.scale())).clamp(0, 28);
    let scale = u32::try_from(scale).expect("clamped to 0..=28");
    let mut rounded = result.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    rounded.rescale(scale);
    Ok(rounded)
}

/// Casts to the types whose only casts are from their text form (and json from jsonb).
fn cast_from_text_input(datum: Datum, from: &SqlType, to: &SqlType) -> Result<Datum> {
    Ok(match (to, &datum) {
        (SqlType::Json, Datum::Text(text)) => parse_json_text(text)?,
        (SqlType::JsonPath, Datum::Text(text)) => {
            Datum::Text(super::jsonpath::parse_jsonpath(text)?.output())
        }
        (SqlType::Json, Datum::Jsonb(value)) => Datum::Text(value.output()),
        (SqlType::Jsonb, Datum::Text(text)) => parse_jsonb(text)?,
        (SqlType::Uuid, Datum::Uuid(_)) => datum,
        (SqlType::Uuid, Datum::Text(text)) => super::parse_uuid(text)?,
        _ => return Err(cannot_cast(from, to)),
    })
}

/// Casts to timestamp and timestamptz: wall-clock values become instants in the session
/// zone, and back.
fn cast_to_timestamp(datum: &Datum, from: &SqlType, to: &SqlType) -> Result<Datum> {
    let zoned = *to == SqlType::TimestampTz;
    let micros = match datum {
        Datum::Text(text) => parse_timestamp(text, zoned)?,
        Datum::Date(days) if zoned => super::date_to_timestamptz_micros(*days)?,
        Datum::Date(days) => super::date_to_timestamp_micros(*days)?,
        // infinity and -infinity are the same in every zone.
        Datum::Timestamp(micros) | Datum::TimestampTz(micros)
            if super::is_infinite_timestamp(*micros) =>
        {
            *micros
        }
        Datum::Timestamp(micros) if zoned => super::session_local_to_utc(*micros),
        Datum::TimestampTz(micros) if !zoned => super::utc_to_session_local(*micros),
        Datum::Timestamp(micros) | Datum::TimestampTz(micros) => *micros,
        _ => return Err(cannot_cast(from, to)),
    };
    Ok(if zoned { Datum::TimestampTz(micros) } else { Datum::Timestamp(micros) })
}

/// Casts to interval (from text, time) and to time (from text, timestamps, interval).
fn cast_to_interval_or_time(datum: Datum, from: &SqlType, to: &SqlType) -> Result<Datum> {
    Ok(match (to, &datum) {
        (SqlType::Interval, Datum::Interval(_)) | (SqlType::Time, Datum::Time(_)) => datum,
        (SqlType::Interval, Datum::Text(text)) => Datum::Interval(parse_interval(text)?),
        // timestamp_time: an infinite timestamp has no time of day.
        (SqlType::Time, Datum::Timestamp(micros) | Datum::TimestampTz(micros))
            if super::is_infinite_timestamp(*micros) =>
        {
            Datum::Null
        }
        (SqlType::Interval, Datum::Time(micros)) => Datum::Interval(Interval::new(0, 0, *micros)),
        (SqlType::Time, Datum::Text(text)) => Datum::Time(parse_time(text)?),
        (SqlType::Time, Datum::Timestamp(micros)) => {
            Datum::Time(micros.rem_euclid(MICROSECONDS_PER_DAY))
        }
        (SqlType::Time, Datum::TimestampTz(micros)) => {
            Datum::Time(super::utc_to_session_local(*micros).rem_euclid(MICROSECONDS_PER_DAY))
        }
        // interval_time: the time part modulo a day (days and months are dropped).
        (SqlType::Time, Datum::Interval(interval)) => {
            Datum::Time(interval.micros.rem_euclid(MICROSECONDS_PER_DAY))
        }
        _ => return Err(cannot_cast(from, to)),
    })
}

/// Casts to bit(n) and bit varying(n): from either (binary-coercible, then the length
/// coercion), from text, and from integer and bigint to bit(n) (bitfromint4 / bitfromint8).
fn cast_to_bit_type(datum: &Datum, from: &SqlType, to: &SqlType, explicit: bool) -> Result<Datum> {
    let bits = match datum {
        Datum::Bit(bits) => bits.clone(),
        // Text (an untyped literal, or text / varchar by PostgreSQL's I/O cast) is read
        // without the typmod, which the length coercion applies next: padding or
        // truncating when explicit (`'101'::text::bit(4)` is 1010), 22026 otherwise.
        Datum::Text(text) => {
            let bits = Arc::new(parse_bit_string(text)?);
            return apply_bit_typmod(&bits, to, explicit);
        }
        Datum::Int(value)
            if matches!((from, to), (SqlType::Int4 | SqlType::Int8, SqlType::Bit(_))) =>
        {
            let width = if *from == SqlType::Int4 { 32 } else { 64 };
            let SqlType::Bit(length) = to else { unreachable!("matched bit") };
            return Ok(bit_from_integer(*value, width, *length));
        }
        _ => return Err(cannot_cast(from, to)),
    };
    apply_bit_typmod(&bits, to, explicit)
}
