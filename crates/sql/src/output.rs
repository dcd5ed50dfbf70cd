//! What a statement returns to the client.

use crate::parse::front::CopyStatement;
use crate::plan::OutputColumn;
use crate::types::Row;

/// What a statement returns to the client.
#[derive(Debug)]
pub enum Output {
    Rows {
        columns: Vec<OutputColumn>,
        rows: Vec<Row>,
        tag: String,
    },
    Command {
        tag: String,
    },
    /// COPY FROM STDIN: the client sends data next; pass it to `Session::copy_in`.
    CopyIn {
        statement: CopyStatement,
        columns: usize,
    },
    CopyOut {
        data: Vec<u8>,
        columns: usize,
        rows: u64,
        csv: bool,
    },
    Empty,
}

impl Output {
    pub fn command(tag: impl Into<String>) -> Output {
        Output::Command { tag: tag.into() }
    }
}
