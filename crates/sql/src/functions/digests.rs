//! sha224 / sha256 / sha384 / sha512 of bytea (PostgreSQL's cryptohashfuncs.c): the digest's
//! bytes as bytea.

use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::Datum;

/// The digest named `name` of the call's bytea argument (the binder coerced it to bytea).
pub(super) fn sha(call: &Call<'_>, name: &str) -> Result<Datum> {
    let Some(Datum::Bytes(bytes)) = call.args.first() else {
        return Err(SqlError::internal(format!("{name} is bound with a bytea argument")));
    };
    let digest = match name {
        "sha224" => Sha224::digest(bytes).to_vec(),
        "sha256" => Sha256::digest(bytes).to_vec(),
        "sha384" => Sha384::digest(bytes).to_vec(),
        "sha512" => Sha512::digest(bytes).to_vec(),
        other => return Err(SqlError::internal(format!("{other} is not a SHA-2 digest"))),
    };
    Ok(Datum::Bytes(digest))
}
