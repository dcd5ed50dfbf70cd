//! Client authentication rules in PostgreSQL's pg_hba.conf model: lines of
//! `TYPE DATABASE USER ADDRESS METHOD`, checked in order when a startup packet arrives; the
//! first line matching the connection (TLS or not, database, user, client address) picks the
//! method, and no matching line refuses the connection.
//!
//! Only what the TCP server can honour is accepted: types host, hostssl and hostnossl (no
//! Unix socket, so no `local`), names or `all`, CIDR ranges or `all`, and the methods trust,
//! scram-sha-256 and reject. Anything else fails the server's start with the line number,
//! as PostgreSQL refuses a pg_hba.conf it cannot load: a rule silently read differently
//! from what its author meant would let in clients it was written to keep out.

use std::fmt;
use std::net::IpAddr;

/// Which transports a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionType {
    /// TCP, with or without TLS.
    Host,
    /// TCP with TLS only.
    HostSsl,
    /// TCP without TLS only.
    HostNoSsl,
}

/// The databases or users a rule names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Names {
    All,
    /// Compared exactly (case-sensitive), as PostgreSQL compares them.
    List(Vec<String>),
}

/// The client addresses a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressRange {
    All,
    /// `network/prefix_bits`; only addresses of the same family match.
    Cidr {
        network: IpAddr,
        prefix_bits: u8,
    },
}

/// What a matching rule does with the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// In without a password.
    Trust,
    /// SCRAM-SHA-256 with the configured password.
    ScramSha256,
    /// Refused (FATAL 28000).
    Reject,
}

/// One rule, with the line it came from (0 for built-in rules).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub connection_type: ConnectionType,
    pub databases: Names,
    pub users: Names,
    pub address: AddressRange,
    pub method: Method,
    pub line_number: usize,
}

/// What a rule is matched against: known once the startup packet has arrived.
#[derive(Clone, Debug)]
pub struct Client<'a> {
    pub address: IpAddr,
    pub tls: bool,
    pub database: &'a str,
    pub user: &'a str,
}

/// The rules in force, in order, and where they came from (for the log).
#[derive(Clone, Debug)]
pub struct Rules {
    pub source: String,
    pub rules: Vec<Rule>,
}

impl Rules {
    /// The rule set an `auth` shorthand stands for (`trust-loopback`, `scram` or
    /// `scram-sha-256`, `trust`).
    pub fn shorthand(auth: &str) -> Result<Rules, String> {
        let rule = |address: &str, method: Method| Rule {
            connection_type: ConnectionType::Host,
            databases: Names::All,
            users: Names::All,
            address: parse_address(address).expect("built-in addresses are valid"),
            method,
            line_number: 0,
        };
        let rules = match auth {
            "trust-loopback" => vec![
                rule("127.0.0.1/32", Method::Trust),
                rule("::1/128", Method::Trust),
                rule("all", Method::ScramSha256),
            ],
            "scram" | "scram-sha-256" => vec![rule("all", Method::ScramSha256)],
            "trust" => vec![rule("all", Method::Trust)],
            other => {
                return Err(format!(
                    "unknown auth={other} (expected trust-loopback, scram or trust)"
                ))
            }
        };
        Ok(Rules { source: format!("auth={auth}"), rules })
    }

    /// Parses a file in pg_hba.conf syntax; `file_name` names it in errors.
    pub fn parse(text: &str, file_name: &str) -> Result<Rules, String> {
        let mut rules = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_number = index + 1;
            let fields = tokenize(line)
                .and_then(|fields| parse_rule(&fields, line_number))
                .map_err(|reason| format!("hba_file {file_name}, line {line_number}: {reason}"))?;
            rules.extend(fields);
        }
        if rules.is_empty() {
            // PostgreSQL refuses such a file too: it would refuse every connection.
            return Err(format!("hba_file {file_name} contains no entries"));
        }
        Ok(Rules { source: format!("hba_file={file_name}"), rules })
    }

    /// The first rule matching `client`, if any.
    pub fn find(&self, client: &Client) -> Option<&Rule> {
        self.rules.iter().find(|rule| rule.matches(client))
    }
}

impl Rule {
    fn matches(&self, client: &Client) -> bool {
        let transport = match self.connection_type {
            ConnectionType::Host => true,
            ConnectionType::HostSsl => client.tls,
            ConnectionType::HostNoSsl => !client.tls,
        };
        transport
            && self.databases.contains(client.database)
            && self.users.contains(client.user)
            && self.address.contains(client.address)
    }
}

impl Names {
    fn contains(&self, name: &str) -> bool {
        match self {
            Names::All => true,
            Names::List(names) => names.iter().any(|listed| listed == name),
        }
    }
}

impl AddressRange {
    /// Whether `address` is in the range. An IPv4 client seen through an IPv6 socket
    /// (`::ffff:a.b.c.d`) is the IPv4 client it is; otherwise families never mix.
    pub fn contains(&self, address: IpAddr) -> bool {
        let AddressRange::Cidr { network, prefix_bits } = *self else { return true };
        match (network, canonical(address)) {
            (IpAddr::V4(network), IpAddr::V4(client)) => same_prefix(
                u128::from(u32::from(network)) << 96,
                u128::from(u32::from(client)) << 96,
                prefix_bits,
            ),
            (IpAddr::V6(network), IpAddr::V6(client)) => {
                same_prefix(u128::from(network), u128::from(client), prefix_bits)
            }
            _ => false,
        }
    }
}

/// The method for `client` under `rules`, or why it is refused, in PostgreSQL's words
/// (FATAL 28000): no matching rule, or a matching reject rule.
pub fn decide(rules: &Rules, client: &Client) -> Result<Method, String> {
    let encryption = if client.tls { "SSL encryption" } else { "no encryption" };
    let who = || {
        format!(
            "host \"{}\", user \"{}\", database \"{}\", {encryption}",
            canonical(client.address),
            client.user,
            client.database
        )
    };
    match rules.find(client) {
        None => Err(format!("no pg_hba.conf entry for {}", who())),
        Some(rule) if rule.method == Method::Reject => {
            Err(format!("pg_hba.conf rejects connection for {}", who()))
        }
        Some(rule) => Ok(rule.method),
    }
}

/// The address a client really has: IPv4-mapped IPv6 addresses as IPv4.
pub fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

/// Whether the first `prefix_bits` bits of two left-aligned 128-bit values agree.
fn same_prefix(network: u128, client: u128, prefix_bits: u8) -> bool {
    debug_assert!(prefix_bits <= 128);
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix_bits)).unwrap_or(0);
    network & mask == client & mask
}

/// One comma-separated item of a field, and whether it was quoted (a quoted `"all"` is a
/// name, not the keyword, as in PostgreSQL).
#[derive(Debug)]
struct Item {
    text: String,
    quoted: bool,
}

/// Splits a line into fields of comma-separated items. Whitespace separates fields, except
/// after a comma (`db1, db2` is one field); `#` outside quotes starts a comment.
fn tokenize(line: &str) -> Result<Vec<Vec<Item>>, String> {
    let empty = || Item { text: String::new(), quoted: false };
    let mut fields: Vec<Vec<Item>> = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    let mut current = empty();
    // The current item has a character or quotes; the last thing seen was a comma.
    let mut started = false;
    let mut after_comma = false;
    let mut in_quotes = false;
    for character in line.chars() {
        if in_quotes {
            match character {
                '"' => in_quotes = false,
                character => current.text.push(character),
            }
            continue;
        }
        match character {
            '#' => break,
            ',' => {
                items.push(std::mem::replace(&mut current, empty()));
                (started, after_comma) = (false, true);
            }
            character if character.is_whitespace() => {
                if started {
                    items.push(std::mem::replace(&mut current, empty()));
                    fields.push(std::mem::take(&mut items));
                    started = false;
                }
            }
            character => {
                if character == '"' {
                    (in_quotes, current.quoted) = (true, true);
                } else {
                    current.text.push(character);
                }
                (started, after_comma) = (true, false);
            }
        }
    }
    if in_quotes {
        return Err("unterminated quoted string".into());
    }
    if started || after_comma {
        items.push(current);
    }
    if !items.is_empty() {
        fields.push(items);
    }
    Ok(fields)
}

/// A rule from a tokenized line; None for a blank or comment line.
fn parse_rule(fields: &[Vec<Item>], line_number: usize) -> Result<Option<Rule>, String> {
    let Some((type_field, rest)) = fields.split_first() else { return Ok(None) };
    let connection_type = match single(type_field, "connection type")? {
        "host" => ConnectionType::Host,
        "hostssl" => ConnectionType::HostSsl,
        "hostnossl" => ConnectionType::HostNoSsl,
        "local" => {
            return Err(
                "connection type \"local\" is not supported: tierdb has no Unix-domain socket yet"
                    .into(),
            )
        }
        "hostgssenc" | "hostnogssenc" => {
            return Err(
                "connection types hostgssenc and hostnogssenc are not supported (no GSSAPI)".into(),
            )
        }
        other => return Err(format!("invalid connection type \"{other}\"")),
    };
    let [databases, users, address, method, options @ ..] = rest else {
        let missing = ["database", "role", "IP address", "authentication method"][rest.len()];
        return Err(format!("end-of-line before {missing} specification"));
    };
    // The address first: an address followed by a mask column reads as a bad address,
    // not as a method.
    let address = parse_address(single(address, "IP address")?)?;
    if !options.is_empty() {
        return Err("authentication options are not supported".into());
    }
    Ok(Some(Rule {
        connection_type,
        databases: parse_names(
            databases,
            "database",
            &["sameuser", "samerole", "samegroup", "replication"],
        )?,
        users: parse_names(users, "role", &[])?,
        address,
        method: parse_method(single(method, "authentication method")?)?,
        line_number,
    }))
}

/// The field's text when it holds one item (no comma list).
fn single<'a>(field: &'a [Item], what: &str) -> Result<&'a str, String> {
    match field {
        [item] if !item.text.is_empty() => Ok(&item.text),
        _ => Err(format!("multiple values or an empty value in {what} field")),
    }
}

/// `all` or a comma list of names; PostgreSQL's keywords we do not implement are refused.
fn parse_names(field: &[Item], what: &str, unsupported: &[&str]) -> Result<Names, String> {
    let mut names = Vec::with_capacity(field.len());
    for item in field {
        if item.text.is_empty() {
            return Err(format!("empty name in {what} field"));
        }
        if item.quoted {
            names.push(item.text.clone());
            continue;
        }
        if item.text == "all" {
            if field.len() > 1 {
                return Err(format!("\"all\" cannot be part of a list in the {what} field"));
            }
            return Ok(Names::All);
        }
        if unsupported.contains(&item.text.as_str()) {
            return Err(format!("{what} keyword \"{}\" is not supported", item.text));
        }
        if item.text.starts_with('+') || item.text.starts_with('@') {
            return Err(format!(
                "group (+name) and file (@file) references in the {what} field are not supported"
            ));
        }
        names.push(item.text.clone());
    }
    Ok(Names::List(names))
}

/// `all` or `address/prefix_bits`; the prefix bits past the network are ignored (as in
/// PostgreSQL, `10.1.2.3/8` is `10.0.0.0/8`).
fn parse_address(text: &str) -> Result<AddressRange, String> {
    if text == "all" {
        return Ok(AddressRange::All);
    }
    if matches!(text, "samehost" | "samenet") {
        return Err(format!("address keyword \"{text}\" is not supported"));
    }
    let Some((address, bits)) = text.split_once('/') else {
        return Err(format!(
            "address \"{text}\" needs a CIDR mask length (for example {text}/32): host names and separate mask columns are not supported"
        ));
    };
    let network: IpAddr =
        address.parse().map_err(|_| format!("invalid IP address \"{address}\""))?;
    let family_bits = if network.is_ipv4() { 32 } else { 128 };
    let prefix_bits = bits
        .parse::<u8>()
        .ok()
        .filter(|bits| *bits <= family_bits)
        .ok_or_else(|| format!("invalid CIDR mask in address \"{text}\""))?;
    Ok(AddressRange::Cidr { network, prefix_bits })
}

fn parse_method(text: &str) -> Result<Method, String> {
    match text {
        "trust" => Ok(Method::Trust),
        "scram-sha-256" => Ok(Method::ScramSha256),
        "reject" => Ok(Method::Reject),
        "password" | "md5" => Err(format!(
            "authentication method \"{text}\" is not supported: it exposes the password or a reusable hash; use scram-sha-256"
        )),
        "gss" | "sspi" | "ident" | "peer" | "pam" | "ldap" | "radius" | "cert" | "bsd" => {
            Err(format!("authentication method \"{text}\" is not supported (trust, scram-sha-256 or reject)"))
        }
        other => Err(format!("invalid authentication method \"{other}\"")),
    }
}

impl fmt::Display for Rule {
    /// The rule as a pg_hba.conf line (for the log at start).
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let connection_type = match self.connection_type {
            ConnectionType::Host => "host",
            ConnectionType::HostSsl => "hostssl",
            ConnectionType::HostNoSsl => "hostnossl",
        };
        let method = match self.method {
            Method::Trust => "trust",
            Method::ScramSha256 => "scram-sha-256",
            Method::Reject => "reject",
        };
        write!(formatter, "{connection_type} {} {} ", self.databases, self.users)?;
        match self.address {
            AddressRange::All => write!(formatter, "all")?,
            AddressRange::Cidr { network, prefix_bits } => {
                write!(formatter, "{network}/{prefix_bits}")?
            }
        }
        write!(formatter, " {method}")
    }
}

impl fmt::Display for Names {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Names::All => write!(formatter, "all"),
            Names::List(names) => {
                let quoted: Vec<String> = names.iter().map(|name| format!("\"{name}\"")).collect();
                write!(formatter, "{}", quoted.join(","))
            }
        }
    }
}

#[cfg(test)]
#[path = "hba_tests.rs"]
mod tests;
