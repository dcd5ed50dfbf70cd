//! Binary operators: comparisons and arithmetic with PostgreSQL's operand typing.

use super::*;

impl<'a> Binder<'a> {
    pub(crate) fn binary(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        use ast::BinaryOperator as B;
        let compare = match op {
            B::Eq => Some(CompareOp::Eq),
            B::NotEq => Some(CompareOp::NotEq),
            B::Lt => Some(CompareOp::Lt),
            B::LtEq => Some(CompareOp::LtEq),
            B::Gt => Some(CompareOp::Gt),
            B::GtEq => Some(CompareOp::GtEq),
            _ => None,
        };
        if let Some(op) = compare {
            if let (true, ast::Expr::Subquery(query)) = (is_row(left), right) {
                return self.subquery_comparison(left, op, Quantifier::Single, false, query, scope);
            }
            if let (ast::Expr::Subquery(_), true) = (left, is_row(right)) {
                // PostgreSQL reads a subquery left of a row as a scalar subquery.
                self.expr(left, scope, None)?;
            }
            if is_row(left) || is_row(right) {
                let expanded = row_comparison(left, op, right)?;
                return self.expr(&expanded, scope, None);
            }
            let (left, right, bpchar) = self.comparable(left, right, scope)?;
            return Ok((
                Expr::Compare { op, left: Box::new(left), right: Box::new(right), bpchar },
                SqlType::Bool,
            ));
        }
        if let Some(function) = vector_operator_function(op) {
            return self.vector_operator(function, left, op, right, scope);
        }
        if let Some(bound) = self.bit_binary(left, op, right, scope)? {
            return Ok(bound);
        }
        if let Some(bound) = self.json_binary(left, op, right, scope)? {
            return Ok(bound);
        }
        match op {
            B::And | B::Or => {
                // A 10,000-term OR list (ORM filters) is a 10,000-deep syntax tree: its
                // operands are bound in a loop and combined into a balanced tree, so that
                // neither binding nor evaluation recurses once per term.
                let mut operands = Vec::new();
                for operand in chain_operands(left, op, right) {
                    operands.push(self.coerced(operand, scope, &SqlType::Bool)?);
                }
                let combine = if *op == B::And { Expr::And } else { Expr::Or };
                Ok((balanced_tree(operands, combine), SqlType::Bool))
            }
            B::StringConcat => self.concatenation(left, right, scope),
            B::PGLikeMatch | B::PGILikeMatch | B::PGNotLikeMatch | B::PGNotILikeMatch => {
                let value = self.text_arg(left, scope)?;
                let pattern = self.text_arg(right, scope)?;
                Ok((
                    Expr::Like {
                        expr: Box::new(value),
                        pattern: Box::new(pattern),
                        negated: matches!(op, B::PGNotLikeMatch | B::PGNotILikeMatch),
                        case_insensitive: matches!(op, B::PGILikeMatch | B::PGNotILikeMatch),
                    },
                    SqlType::Bool,
                ))
            }
            B::PGCustomBinaryOperator(parts) => {
                let symbol = parts.last().map(String::as_str).unwrap_or_default();
                let op = match symbol {
                    "~" => B::PGRegexMatch,
                    "~*" => B::PGRegexIMatch,
                    "!~" => B::PGRegexNotMatch,
                    "!~*" => B::PGRegexNotIMatch,
                    "=" => B::Eq,
                    "<>" => B::NotEq,
                    "<" => B::Lt,
                    "<=" => B::LtEq,
                    ">" => B::Gt,
                    ">=" => B::GtEq,
                    "~~" => B::PGLikeMatch,
                    other => {
                        return Err(SqlError::undefined_operator(format!(
                            "operator does not exist: {other}"
                        )))
                    }
                };
                self.binary(left, &op, right, scope, hint)
            }
            B::PGRegexMatch | B::PGRegexIMatch | B::PGRegexNotMatch | B::PGRegexNotIMatch => {
                let value = self.text_arg(left, scope)?;
                let pattern = self.text_arg(right, scope)?;
                let name = match op {
                    B::PGRegexMatch => "regex_match",
                    B::PGRegexIMatch => "regex_imatch",
                    B::PGRegexNotMatch => "regex_not_match",
                    _ => "regex_not_imatch",
                };
                bind_call(name, vec![(value, SqlType::Text), (pattern, SqlType::Text)])
            }
            // `@>` and `<@` reach the array functions through the json operators (`json_binary`).
            B::PGOverlap => self.array_operator(left, op, right, scope),
            B::Plus | B::Minus | B::Multiply | B::Divide | B::Modulo | B::PGExp => {
                self.arithmetic(left, op, right, scope, hint)
            }
            B::Overlaps => self.overlaps(left, right, scope),
            other => Err(SqlError::unsupported(format!("operator {other} is not supported"))),
        }
    }

    /// `(start, end) OVERLAPS (start, end)`: PostgreSQL's grammar makes it a call of
    /// overlaps() with the rows' four values (42601 unless each row has two).
    fn overlaps(
        &mut self,
        left: &ast::Expr,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let mut args = Vec::with_capacity(4);
        for (side, row) in [("left", left), ("right", right)] {
            let ast::Expr::Tuple(points) = row else {
                // PostgreSQL's grammar stops at OVERLAPS after a left value that is not a
                // row, at the closing parenthesis of a right one.
                let near = if side == "right" && matches!(row, ast::Expr::Nested(_)) {
                    ")"
                } else {
                    "OVERLAPS"
                };
                return Err(SqlError::syntax(format!("syntax error at or near \"{near}\"")));
            };
            if points.len() != 2 {
                return Err(SqlError::syntax(format!(
                    "wrong number of parameters on {side} side of OVERLAPS expression"
                )));
            }
            for point in points {
                args.push(self.expr(point, scope, None)?);
            }
        }
        bind_call("overlaps", args).map_err(|error| qualified_in_error(error, "overlaps"))
    }

    /// `||`: pgvector's vector concatenation, arrays, bit strings, jsonb, else text.
    fn concatenation(
        &mut self,
        left: &ast::Expr,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let (left, left_ty) = self.expr(left, scope, Some(&SqlType::Text))?;
        let (right, right_ty) = self.expr(right, scope, Some(&SqlType::Text))?;
        if is_vector_operation(&left_ty, &right_ty) {
            return bind_call("vector_concat", vec![(left, left_ty), (right, right_ty)]);
        }
        if left_ty.array_element().is_some() || right_ty.array_element().is_some() {
            return self.array_concat((left, left_ty), (right, right_ty));
        }
        if is_bit_operation(&left_ty, &right_ty) {
            return bind_call("bitcat", vec![(left, left_ty), (right, right_ty)]);
        }
        if is_jsonb_concatenation(&left_ty, &right_ty) {
            return bind_call("jsonb_concat", vec![(left, left_ty), (right, right_ty)]);
        }
        let left = coerce(left, &left_ty, &SqlType::Text, true)?;
        let right = coerce(right, &right_ty, &SqlType::Text, true)?;
        Ok((Expr::Concat(Box::new(left), Box::new(right)), SqlType::Text))
    }

    /// pgvector's distance operators, bound as calls of their functions.
    fn vector_operator(
        &mut self,
        function: &'static str,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        use ast::BinaryOperator as B;
        // A parameter takes the other operand's type (vector or halfvec; vector when both
        // are parameters); an untyped literal stays unknown until the call is resolved
        // (two of them are ambiguous, as in PostgreSQL with pgvector).
        let (left, left_ty, right, right_ty) = if is_placeholder(left) {
            let (right, right_ty) = self.vector_operand(right, scope, None)?;
            let (left, left_ty) = self.vector_operand(left, scope, Some(&right_ty))?;
            (left, left_ty, right, right_ty)
        } else {
            let (left, left_ty) = self.vector_operand(left, scope, None)?;
            let (right, right_ty) = self.vector_operand(right, scope, Some(&left_ty))?;
            (left, left_ty, right, right_ty)
        };
        if function == "jsonb_path_match_opr" && left_ty != SqlType::Jsonb {
            // PostgreSQL's other @@ operators are text search's.
            return Err(SqlError::unsupported(
                "operator @@ is not supported: text search is not supported",
            ));
        }
        if left_ty == SqlType::Unknown && right_ty == SqlType::Unknown {
            let symbol = match op {
                B::Custom(symbol) if symbol == crate::parse::L1_OPERATOR_STAND_IN => "<+>".into(),
                other => other.to_string(),
            };
            return Err(SqlError::new(
                "42725",
                format!("operator is not unique: unknown {symbol} unknown"),
            ));
        }
        let (mut call, ty) = bind_call(function, vec![(left, left_ty), (right, right_ty)])?;
        if let Expr::Function(call) = &mut call {
            call.operator = Some(vector_operator_symbol(function));
        }
        Ok((call, ty))
    }

    /// One operand of a distance operator; a parameter is typed as `other` when that is a
    /// halfvec or a sparsevec, else as a vector.
    fn vector_operand(
        &mut self,
        operand: &ast::Expr,
        scope: &Scope,
        other: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        if !is_placeholder(operand) {
            return self.expr(operand, scope, None);
        }
        let ty = match other {
            Some(SqlType::HalfVec(_)) => SqlType::HalfVec(None),
            Some(SqlType::SparseVec(_)) => SqlType::SparseVec(None),
            _ => SqlType::Vector(None),
        };
        self.expr(operand, scope, Some(&ty))
    }

    /// `+ - * / % ^`: numeric arithmetic, or pgvector's element-wise vector operations.
    fn arithmetic(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
        hint: Option<&SqlType>,
    ) -> Result<(Expr, SqlType)> {
        use ast::BinaryOperator as B;
        let arithmetic = match op {
            B::Plus => ArithmeticOp::Add,
            B::Minus => ArithmeticOp::Subtract,
            B::Multiply => ArithmeticOp::Multiply,
            B::Divide => ArithmeticOp::Divide,
            B::Modulo => ArithmeticOp::Modulo,
            _ => ArithmeticOp::Power,
        };
        let (left, left_ty, right, right_ty) = if is_placeholder(left) {
            let (right, right_ty) = self.expr(right, scope, hint)?;
            let (left, left_ty) = self.expr(left, scope, Some(&right_ty))?;
            (left, left_ty, right, right_ty)
        } else {
            let (left, left_ty) = self.expr(left, scope, hint)?;
            let (right, right_ty) = self.expr(right, scope, Some(&left_ty))?;
            (left, left_ty, right, right_ty)
        };
        let vector_function = match op {
            B::Plus => Some("vector_add"),
            B::Minus => Some("vector_sub"),
            B::Multiply => Some("vector_mul"),
            _ => None,
        };
        if let Some(function) = vector_function.filter(|_| is_vector_operation(&left_ty, &right_ty))
        {
            return bind_call(function, vec![(left, left_ty), (right, right_ty)]);
        }
        arithmetic_expr(arithmetic, left, &left_ty, right, &right_ty)
    }
}

/// The operator of a pgvector distance function (`vector_operator_function` reversed).
fn vector_operator_symbol(function: &str) -> &'static str {
    match function {
        "l2_distance" => "<->",
        "cosine_distance" => "<=>",
        "vector_negative_inner_product" => "<#>",
        _ => "<+>",
    }
}

/// The json and jsonb operators and the functions they call (`@>` and `<@` over arrays go
/// to the array functions); the jsonpath operators `@?` and `@@` are 0A000.
fn json_operator_function(op: &ast::BinaryOperator) -> Result<Option<&'static str>> {
    use ast::BinaryOperator as B;
    Ok(Some(match op {
        B::Arrow => "json_get",
        B::LongArrow => "json_get_text",
        B::AtArrow => "jsonb_contains",
        B::ArrowAt => "jsonb_contained",
        B::Question => "jsonb_exists",
        B::HashArrow => "jsonb_extract_path_op",
        B::HashLongArrow => "jsonb_extract_path_text_op",
        B::QuestionPipe => "jsonb_exists_any",
        B::QuestionAnd => "jsonb_exists_all",
        B::HashMinus => "jsonb_delete_path",
        B::AtQuestion => "jsonb_path_exists_opr",
        B::AtAt => "jsonb_path_match_opr",
        _ => return Ok(None),
    }))
}

impl Binder<'_> {
    /// A json operator, if `op` is one (None: another operator).
    fn json_binary(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<Option<(Expr, SqlType)>> {
        use ast::BinaryOperator as B;
        if let Some(function) = json_operator_function(op)? {
            return self.json_operator(function, left, op, right, scope).map(Some);
        }
        if let B::Custom(symbol) = op {
            // `j->-1`: PostgreSQL's lexer ends an operator before a trailing minus (the name
            // has none of ~!@#%^&|`?), sqlparser reads one operator `->-`.
            let json = match symbol.as_str() {
                "->-" => Some((B::Arrow, "json_get")),
                "->>-" => Some((B::LongArrow, "json_get_text")),
                _ => None,
            };
            if let Some((op, function)) = json {
                let negated = ast::Expr::UnaryOp {
                    op: ast::UnaryOperator::Minus,
                    expr: Box::new(right.clone()),
                };
                return self.json_operator(function, left, &op, &negated, scope).map(Some);
            }
        }
        Ok(None)
    }

    /// `left op right` for a json operator: its function, PostgreSQL's 42883 naming the
    /// operator when the operand types have none, 42725 for two untyped literals.
    fn json_operator(
        &mut self,
        function: &'static str,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let (left, left_ty) = self.expr(left, scope, None)?;
        let (right, right_ty) = self.expr(right, scope, None)?;
        let array = left_ty.array_element().is_some() || right_ty.array_element().is_some();
        if array && matches!(function, "jsonb_contains" | "jsonb_contained") {
            return super::arrays::array_containment(op, (left, left_ty), (right, right_ty));
        }
        if left_ty == SqlType::Unknown && right_ty == SqlType::Unknown {
            return Err(SqlError::new(
                "42725",
                format!("operator is not unique: unknown {op} unknown"),
            ));
        }
        let operands = format!("{} {op} {}", left_ty.display_name(), right_ty.display_name());
        bind_call(function, vec![(left, left_ty), (right, right_ty)]).map_err(|error| {
            match error.sqlstate {
                "42883" => {
                    SqlError::undefined_operator(format!("operator does not exist: {operands}"))
                }
                "42725" => SqlError::new("42725", format!("operator is not unique: {operands}")),
                _ => error,
            }
        })
    }
}

/// pgvector's distance operators and the functions they call.
fn vector_operator_function(op: &ast::BinaryOperator) -> Option<&'static str> {
    use ast::BinaryOperator as B;
    match op {
        B::LtDashGt => Some("l2_distance"),
        B::Spaceship => Some("cosine_distance"),
        B::Custom(symbol) => match symbol.as_str() {
            "<#>" => Some("vector_negative_inner_product"),
            crate::parse::L1_OPERATOR_STAND_IN => Some("l1_distance"),
            _ => None,
        },
        _ => None,
    }
}

/// A vector or halfvec operand with the other one too or an untyped literal: pgvector's
/// operator.
fn is_vector_operation(left: &SqlType, right: &SqlType) -> bool {
    is_family_operation(left, right, |ty| matches!(ty, SqlType::Vector(_) | SqlType::HalfVec(_)))
}

/// One operand a `member` of a type family and the other one too or an untyped literal.
fn is_family_operation(left: &SqlType, right: &SqlType, member: fn(&SqlType) -> bool) -> bool {
    (member(left) || member(right))
        && (member(left) || *left == SqlType::Unknown)
        && (member(right) || *right == SqlType::Unknown)
}

/// A bit string operand with another one or an untyped literal: the bit string operators.
fn is_bit_operation(left: &SqlType, right: &SqlType) -> bool {
    is_family_operation(left, right, |ty| matches!(ty, SqlType::Bit(_) | SqlType::VarBit(_)))
}

impl Binder<'_> {
    /// The prefix operators `~` (bit strings and integers), `@` (abs), `|/` (square root)
    /// and `||/` (cube root) of float8, as PostgreSQL's dsqrt and dcbrt.
    pub(crate) fn prefix_operator(
        &mut self,
        op: &ast::UnaryOperator,
        inner: &ast::Expr,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let (function, hint) = match op {
            ast::UnaryOperator::PGAbs => ("abs", None),
            ast::UnaryOperator::PGSquareRoot => ("sqrt", Some(SqlType::Float8)),
            ast::UnaryOperator::PGCubeRoot => ("cbrt", Some(SqlType::Float8)),
            _ => ("bitnot", None),
        };
        if let Some(float8) = hint {
            let bound = self.coerced(inner, scope, &float8)?;
            return bind_call(function, vec![(bound, float8)]);
        }
        let (bound, ty) = if function == "bitnot" {
            self.expr(inner, scope, Some(&SqlType::Bit(None)))?
        } else {
            self.expr(inner, scope, None)?
        };
        if function == "abs" {
            return bind_call(function, vec![(bound, ty)]);
        }
        if is_bitwise_integer(&ty) {
            let width = match ty {
                SqlType::Int2 => 2,
                SqlType::Int8 => 8,
                _ => 4,
            };
            return bind_call(&format!("int{width}not"), vec![(bound, ty)]);
        }
        if !matches!(ty, SqlType::Bit(_) | SqlType::VarBit(_) | SqlType::Unknown) {
            // PostgreSQL's prefix ~ is the integers' and bit strings' (and inet's, a type
            // tierdb does not have).
            return Err(SqlError::undefined_operator(format!(
                "operator does not exist: ~ {}",
                ty.display_name()
            )));
        }
        bind_call(function, vec![(bound, ty)])
    }

    /// The bit string operators `& | # << >>` and pgvector's `<~>` and `<%>` over bit
    /// strings (None: another operator or other operand types).
    fn bit_binary(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<Option<(Expr, SqlType)>> {
        use ast::BinaryOperator as B;
        let (function, shift, distance) = match op {
            B::BitwiseAnd => ("bitand", false, None),
            B::BitwiseOr => ("bitor", false, None),
            B::PGBitwiseXor => ("bitxor", false, None),
            B::PGBitwiseShiftLeft => ("bitshiftleft", true, None),
            B::PGBitwiseShiftRight => ("bitshiftright", true, None),
            B::Custom(symbol) if symbol == "<~>" => ("hamming_distance", false, Some("<~>")),
            B::Custom(symbol) if symbol == "<%>" => ("jaccard_distance", false, Some("<%>")),
            _ => return Ok(None),
        };
        let bit = SqlType::Bit(None);
        let (left, left_ty) = self.expr(left, scope, Some(&bit))?;
        let right_hint = if shift { SqlType::Int4 } else { bit };
        let (right, right_ty) = self.expr(right, scope, Some(&right_hint))?;
        let typed = if shift {
            matches!(left_ty, SqlType::Bit(_) | SqlType::VarBit(_))
        } else {
            is_bit_operation(&left_ty, &right_ty)
                || distance.is_some() && left_ty == SqlType::Unknown && right_ty == SqlType::Unknown
        };
        if !typed && distance.is_none() {
            if let Some(name) = integer_bitwise_function(function, &left_ty, &right_ty) {
                let undefined = SqlError::undefined_operator(format!(
                    "operator does not exist: {} {op} {}",
                    left_ty.display_name(),
                    right_ty.display_name()
                ));
                return match bind_call(&name, vec![(left, left_ty), (right, right_ty)]) {
                    Err(error) if error.sqlstate == "42883" => Err(undefined),
                    bound => bound.map(Some),
                };
            }
        }
        if !typed {
            // The other types PostgreSQL has these operators for (inet, ranges, the
            // geometric types) are types tierdb does not have.
            return Err(SqlError::undefined_operator(format!(
                "operator does not exist: {} {op} {}",
                left_ty.display_name(),
                right_ty.display_name()
            )));
        }
        let (mut call, ty) = bind_call(function, vec![(left, left_ty), (right, right_ty)])?;
        if let (Expr::Function(call), Some(symbol)) = (&mut call, distance) {
            call.operator = Some(symbol);
        }
        Ok(Some((call, ty)))
    }
}

/// The integer types' bitwise operators (`& | # << >>`).
fn is_bitwise_integer(ty: &SqlType) -> bool {
    matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
}

/// The integer function of a bit string operator's `function` over these operand types
/// (PostgreSQL's int2and ... int8shr), None when the operands are not integers. `& | #`
/// take both operands in their common type (an untyped literal takes the other's); a shift
/// is by an int4 and returns its left operand's type.
pub(super) fn integer_bitwise_function(
    function: &str,
    left: &SqlType,
    right: &SqlType,
) -> Option<String> {
    let fits = |ty: &SqlType| is_bitwise_integer(ty) || *ty == SqlType::Unknown;
    if !fits(left) || !fits(right) || (*left == SqlType::Unknown && *right == SqlType::Unknown) {
        return None;
    }
    let width_of = |ty: &SqlType| match ty {
        SqlType::Int2 => 2,
        SqlType::Int8 => 8,
        _ => 4,
    };
    let (width, suffix) = match function {
        "bitshiftleft" => (width_of(left), "shl"),
        "bitshiftright" => (width_of(left), "shr"),
        _ => {
            let widest = [left, right].into_iter().filter(|ty| is_bitwise_integer(ty));
            let width = widest.map(width_of).max().unwrap_or(4);
            (width, function.strip_prefix("bit").unwrap_or(function))
        }
    };
    Some(format!("int{width}{suffix}"))
}

/// jsonb || jsonb (an untyped literal read as jsonb): jsonb's concatenation; jsonb with a
/// typed text operand is text concatenation, as in PostgreSQL.
fn is_jsonb_concatenation(left: &SqlType, right: &SqlType) -> bool {
    matches!(
        (left, right),
        (SqlType::Jsonb, SqlType::Jsonb | SqlType::Unknown) | (SqlType::Unknown, SqlType::Jsonb)
    )
}

pub(crate) fn compare_operands(
    left: Expr,
    left_ty: &SqlType,
    right: Expr,
    right_ty: &SqlType,
) -> Result<(Expr, Expr, bool)> {
    let bpchar = matches!(left_ty, SqlType::Char(_))
        && matches!(right_ty, SqlType::Char(_) | SqlType::Unknown)
        || matches!(right_ty, SqlType::Char(_)) && *left_ty == SqlType::Unknown;
    // json has no equality or ordering operators in PostgreSQL (jsonb has).
    if *left_ty == SqlType::Json || *right_ty == SqlType::Json {
        return Err(SqlError::undefined_operator(format!(
            "operator does not exist: {} = {}",
            left_ty.display_name(),
            right_ty.display_name()
        )));
    }
    let common = SqlType::common(left_ty, right_ty).ok_or_else(|| {
        SqlError::undefined_operator(format!(
            "operator does not exist: {} = {}",
            left_ty.display_name(),
            right_ty.display_name()
        ))
    })?;
    if bpchar {
        let target = if matches!(left_ty, SqlType::Char(_)) { left_ty } else { right_ty };
        // An untyped literal compared with char(n) is padded as char(n).
        let left =
            if *left_ty == SqlType::Unknown { coerce(left, left_ty, target, true)? } else { left };
        let right = if *right_ty == SqlType::Unknown {
            coerce(right, right_ty, target, true)?
        } else {
            right
        };
        return Ok((left, right, true));
    }
    let common = match common {
        SqlType::Unknown => SqlType::Text,
        // bit's comparisons take bit strings of any length (no length coercion).
        SqlType::Bit(_) => SqlType::Bit(None),
        SqlType::VarBit(_) => SqlType::VarBit(None),
        other => text_if_char(&other),
    };
    // pgvector's implicit casts: a vector compared with a halfvec is a halfvec, either with
    // a sparsevec a sparsevec.
    let pgvector_cast = |ty: &SqlType| {
        matches!(
            (ty, &common),
            (SqlType::Vector(_), SqlType::HalfVec(_) | SqlType::SparseVec(_))
                | (SqlType::HalfVec(_), SqlType::SparseVec(_))
        )
    };
    let coerce_side = |expr: Expr, ty: &SqlType| -> Result<Expr> {
        if *ty == SqlType::Unknown
            || matches!(ty, SqlType::Char(_)) && common == SqlType::Text
            || pgvector_cast(ty)
        {
            coerce(expr, ty, &common, false)
        } else {
            Ok(expr)
        }
    };
    Ok((coerce_side(left, left_ty)?, coerce_side(right, right_ty)?, false))
}

pub(crate) fn arithmetic_expr(
    op: ArithmeticOp,
    left: Expr,
    left_ty: &SqlType,
    right: Expr,
    right_ty: &SqlType,
) -> Result<(Expr, SqlType)> {
    // jsonb - text / text[] / integer deletes keys or an element.
    if *left_ty == SqlType::Jsonb && op == ArithmeticOp::Subtract {
        let operands = format!("jsonb - {}", right_ty.display_name());
        return bind_call("jsonb_delete", vec![(left, left_ty.clone()), (right, right_ty.clone())])
            .map_err(|error| match error.sqlstate {
                "42883" => {
                    SqlError::undefined_operator(format!("operator does not exist: {operands}"))
                }
                _ => error,
            });
    }
    if let Some((left_target, right_target, ty)) =
        crate::bind::datetime::operator_types(op, left_ty, right_ty)?
    {
        let left = coerce(left, left_ty, &left_target, false)?;
        let right = coerce(right, right_ty, &right_target, false)?;
        let (left, right) = (Box::new(left), Box::new(right));
        return Ok((Expr::Arithmetic { op, left, right, ty: ty.clone() }, ty));
    }
    // Dates: date + integer, date - integer, date - date.
    if *left_ty == SqlType::Date
        && (right_ty.is_integer() || *right_ty == SqlType::Unknown)
        && matches!(op, ArithmeticOp::Add | ArithmeticOp::Subtract)
    {
        let right = coerce(right, right_ty, &SqlType::Int4, false)?;
        return Ok((
            Expr::Arithmetic {
                op,
                left: Box::new(left),
                right: Box::new(right),
                ty: SqlType::Date,
            },
            SqlType::Date,
        ));
    }
    if *left_ty == SqlType::Date && *right_ty == SqlType::Date && op == ArithmeticOp::Subtract {
        return Ok((
            Expr::Arithmetic {
                op,
                left: Box::new(left),
                right: Box::new(right),
                ty: SqlType::Int4,
            },
            SqlType::Int4,
        ));
    }
    let left_known = if *left_ty == SqlType::Unknown { right_ty.clone() } else { left_ty.clone() };
    let right_known =
        if *right_ty == SqlType::Unknown { left_known.clone() } else { right_ty.clone() };
    let left_known = if left_known == SqlType::Unknown { SqlType::numeric() } else { left_known };
    let right_known =
        if right_known == SqlType::Unknown { SqlType::numeric() } else { right_known };
    let ty = if op == ArithmeticOp::Power {
        if left_known == SqlType::numeric()
            || matches!(left_known, SqlType::Numeric { .. })
            || matches!(right_known, SqlType::Numeric { .. })
        {
            if left_known.is_integer() && right_known.is_integer() {
                SqlType::Float8
            } else {
                SqlType::numeric()
            }
        } else {
            SqlType::Float8
        }
    } else {
        SqlType::arithmetic(&left_known, &right_known).ok_or_else(|| {
            SqlError::undefined_operator(format!(
                "operator does not exist: {} {} {}",
                left_ty.display_name(),
                match op {
                    ArithmeticOp::Add => "+",
                    ArithmeticOp::Subtract => "-",
                    ArithmeticOp::Multiply => "*",
                    ArithmeticOp::Divide => "/",
                    ArithmeticOp::Modulo => "%",
                    ArithmeticOp::Power => "^",
                },
                right_ty.display_name()
            ))
        })?
    };
    let ty = match ty {
        SqlType::Numeric { .. } => SqlType::numeric(),
        other => other,
    };
    let left = coerce(
        left,
        left_ty,
        &if *left_ty == SqlType::Unknown { ty.clone() } else { left_ty.clone() },
        false,
    )?;
    let right = coerce(
        right,
        right_ty,
        &if *right_ty == SqlType::Unknown { ty.clone() } else { right_ty.clone() },
        false,
    )?;
    Ok((Expr::Arithmetic { op, left: Box::new(left), right: Box::new(right), ty: ty.clone() }, ty))
}

pub(crate) fn text_if_char(ty: &SqlType) -> SqlType {
    match ty {
        SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Name => SqlType::Text,
        other => other.clone(),
    }
}

/// A row constructor `(a, b, ...)` as an operand.
pub(crate) fn is_row(expr: &ast::Expr) -> bool {
    matches!(expr, ast::Expr::Tuple(_))
}

/// A comparison of two rows, written as PostgreSQL evaluates it (row-wise comparison,
/// docs 9.24.5): `=` is every pair equal, `<>` any pair different; `<` `<=` `>` `>=` compare
/// pair by pair from the left, the first pair that is not equal deciding (a NULL there
/// gives NULL). The elements of an ordering comparison appear more than once in the
/// expansion: each is evaluated once per appearance.
pub(crate) fn row_comparison(
    left: &ast::Expr,
    op: CompareOp,
    right: &ast::Expr,
) -> Result<ast::Expr> {
    use ast::BinaryOperator as B;
    let (ast::Expr::Tuple(lefts), ast::Expr::Tuple(rights)) = (left, right) else {
        return Err(SqlError::unsupported(
            "comparing a row constructor with a value that is not one is not supported",
        ));
    };
    if lefts.len() != rights.len() {
        return Err(SqlError::syntax("unequal number of entries in row expressions"));
    }
    let pair = |index: usize, op: B| ast::Expr::BinaryOp {
        left: Box::new(lefts[index].clone()),
        op,
        right: Box::new(rights[index].clone()),
    };
    let join = |operands: Vec<ast::Expr>, op: B| {
        operands
            .into_iter()
            .reduce(|all, next| ast::Expr::BinaryOp {
                left: Box::new(all),
                op: op.clone(),
                right: Box::new(ast::Expr::Nested(Box::new(next))),
            })
            .expect("a row has at least one element")
    };
    let last = lefts.len() - 1;
    Ok(match op {
        CompareOp::Eq => join((0..lefts.len()).map(|i| pair(i, B::Eq)).collect(), B::And),
        CompareOp::NotEq => join((0..lefts.len()).map(|i| pair(i, B::NotEq)).collect(), B::Or),
        ordering => {
            let (strict, final_op) = match ordering {
                CompareOp::Lt => (B::Lt, B::Lt),
                CompareOp::LtEq => (B::Lt, B::LtEq),
                CompareOp::Gt => (B::Gt, B::Gt),
                _ => (B::Gt, B::GtEq),
            };
            // a1 < b1 OR (a1 = b1 AND (a2 < b2 OR (a2 = b2 AND ... an <= bn)))
            let mut expanded = pair(last, final_op);
            for index in (0..last).rev() {
                let rest = join(vec![pair(index, B::Eq), expanded], B::And);
                expanded = join(vec![pair(index, strict.clone()), rest], B::Or);
            }
            expanded
        }
    })
}

/// A function PostgreSQL's grammar calls for a syntax (OVERLAPS, OVERLAY) is named
/// qualified in its 42883 / 42725 errors: `function pg_catalog.overlaps(...)`.
pub(super) fn qualified_in_error(mut error: SqlError, name: &str) -> SqlError {
    if matches!(error.sqlstate, "42883" | "42725") {
        error.message =
            error.message.replacen(&format!("{name}("), &format!("pg_catalog.{name}("), 1);
    }
    error
}
