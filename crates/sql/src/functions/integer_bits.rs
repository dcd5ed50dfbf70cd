//! The integer types' bitwise operators as PostgreSQL's int.c and int8.c functions
//! (int2and ... int8shr): `& | #` over two values of one integer type, `~`, and `<< >>` by
//! an int4 count. Shifts are C's on the x86 machines PostgreSQL runs on: the count is taken
//! modulo 32 (int2 and int4, an int2 computed as an int and then truncated) or 64 (int8).

use super::{no_function, Call, Coercion, Function, Signature};
use crate::error::Result;
use crate::types::{Datum, SqlType};

#[derive(Clone, Copy)]
enum Operation {
    And,
    Or,
    Xor,
    Not,
    ShiftLeft,
    ShiftRight,
}

/// The integer type a function's name starts with (int2, int4 or int8).
fn type_of_name(name: &str) -> SqlType {
    match name.get(..4) {
        Some("int2") => SqlType::Int2,
        Some("int8") => SqlType::Int8,
        _ => SqlType::Int4,
    }
}

/// How many bytes an integer type takes.
fn width_bytes(ty: &SqlType) -> u8 {
    match ty {
        SqlType::Int2 => 2,
        SqlType::Int8 => 8,
        _ => 4,
    }
}

/// The arguments of `name`: its integer type (a shift's count an int4), each argument an
/// integer no wider than that or an untyped literal.
fn signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let own = type_of_name(name);
    let shift = name.ends_with("shl") || name.ends_with("shr");
    let mut arguments = Vec::with_capacity(types.len());
    for (index, ty) in types.iter().enumerate() {
        let target = if shift && index == 1 { SqlType::Int4 } else { own.clone() };
        let fits = *ty == SqlType::Unknown
            || (matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
                && width_bytes(ty) <= width_bytes(&target));
        if !fits {
            return Err(no_function(name, types));
        }
        arguments.push(Coercion::Implicit(target));
    }
    Ok(Signature { arguments, output: own })
}

fn evaluate(call: &Call<'_>, operation: Operation) -> Result<Datum> {
    let value = call.int(0);
    let other = call.int(1);
    let result = match operation {
        Operation::And => value & other,
        Operation::Or => value | other,
        Operation::Xor => value ^ other,
        Operation::Not => !value,
        Operation::ShiftLeft | Operation::ShiftRight => shift(call.output, value, other, operation),
    };
    // Bitwise results of values of a type stay in it; shifts are truncated to it above.
    Ok(Datum::Int(call.output.check_integer(result)?))
}

/// `value << count` or `value >> count` (arithmetic) in the type `ty`.
fn shift(ty: &SqlType, value: i64, count: i64, operation: Operation) -> i64 {
    let count = u32::from_ne_bytes(
        i32::try_from(count).expect("the binder made the count an int4").to_ne_bytes(),
    );
    let left = matches!(operation, Operation::ShiftLeft);
    if *ty == SqlType::Int8 {
        return if left { value.wrapping_shl(count) } else { value.wrapping_shr(count) };
    }
    let value = i32::try_from(value).expect("the binder made the value an int2 or int4");
    let shifted = if left { value.wrapping_shl(count) } else { value.wrapping_shr(count) };
    if *ty == SqlType::Int2 {
        let bytes = shifted.to_le_bytes();
        return i64::from(i16::from_le_bytes([bytes[0], bytes[1]]));
    }
    i64::from(shifted)
}

/// The entries of one operation for int2, int4 and int8.
macro_rules! integer_function {
    ($names:expr, $arguments:expr, $operation:expr, $example:literal) => {
        function!($names, $arguments, signature, |c| evaluate(&c, $operation), $example)
    };
}

/// The integer bitwise functions (the binder calls them for the operators).
pub(super) static INTEGER_BITS: &[Function] = &[
    integer_function!(&["int2and", "int4and", "int8and"], 2..=2, Operation::And, "'12', '10'"),
    integer_function!(&["int2or", "int4or", "int8or"], 2..=2, Operation::Or, "'12', '10'"),
    integer_function!(&["int2xor", "int4xor", "int8xor"], 2..=2, Operation::Xor, "'12', '10'"),
    integer_function!(&["int2not", "int4not", "int8not"], 1..=1, Operation::Not, "'12'"),
    integer_function!(&["int2shl", "int4shl", "int8shl"], 2..=2, Operation::ShiftLeft, "'1', 4"),
    integer_function!(&["int2shr", "int4shr", "int8shr"], 2..=2, Operation::ShiftRight, "'-8', 1"),
];
