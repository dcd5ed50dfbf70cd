//! Parser and matching of hba rules: syntax, refusals with line numbers, CIDR edge cases.

use std::net::IpAddr;

use super::*;

fn address(text: &str) -> IpAddr {
    text.parse().expect("test address")
}

fn range(text: &str) -> AddressRange {
    parse_address(text).expect("test range")
}

fn client<'a>(address_text: &str, tls: bool, database: &'a str, user: &'a str) -> Client<'a> {
    Client { address: address(address_text), tls, database, user }
}

fn parse_error(text: &str) -> String {
    Rules::parse(text, "/etc/hba.conf").expect_err("the file is refused")
}

#[test]
fn cidr_v4_edges() {
    assert!(range("0.0.0.0/0").contains(address("203.0.113.9")));
    assert!(range("10.0.0.0/8").contains(address("10.255.255.255")));
    assert!(!range("10.0.0.0/8").contains(address("11.0.0.0")));
    assert!(range("192.0.2.7/32").contains(address("192.0.2.7")));
    assert!(!range("192.0.2.7/32").contains(address("192.0.2.6")));
    // Host bits past the prefix are ignored, as in PostgreSQL.
    assert!(range("10.1.2.3/8").contains(address("10.9.9.9")));
    assert!(range("192.0.2.128/25").contains(address("192.0.2.255")));
    assert!(!range("192.0.2.128/25").contains(address("192.0.2.127")));
}

#[test]
fn cidr_v6_edges() {
    assert!(range("::/0").contains(address("2001:db8::1")));
    assert!(range("::1/128").contains(address("::1")));
    assert!(!range("::1/128").contains(address("::2")));
    assert!(range("fd00::/8").contains(address("fdff:ffff::1")));
    assert!(!range("fd00::/8").contains(address("fe00::1")));
    assert!(range("2001:db8::/127").contains(address("2001:db8::1")));
    assert!(!range("2001:db8::/127").contains(address("2001:db8::2")));
}

#[test]
fn families_never_mix() {
    assert!(!range("0.0.0.0/0").contains(address("::1")));
    assert!(!range("::/0").contains(address("127.0.0.1")));
    assert!(!range("127.0.0.1/32").contains(address("::1")));
    assert!(!range("::1/128").contains(address("127.0.0.1")));
    // An IPv4 client accepted on an IPv6 socket is still that IPv4 client.
    assert!(range("127.0.0.1/32").contains(address("::ffff:127.0.0.1")));
    assert!(!range("::/0").contains(address("::ffff:127.0.0.1")));
    assert!(range("all").contains(address("::1")));
}

#[test]
fn bad_masks_are_refused() {
    for text in ["10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/", "10.0.0.0/x"] {
        let error = parse_address(text).expect_err(text);
        assert!(error.contains("invalid CIDR mask"), "{text}: {error}");
    }
    assert!(parse_address("10.0.0.1").expect_err("no mask").contains("needs a CIDR mask"));
    assert!(parse_address("db.example.com/32").expect_err("host").contains("invalid IP address"));
    assert!(parse_address("samenet").expect_err("keyword").contains("not supported"));
}

#[test]
fn parses_lists_comments_and_quotes() {
    let text = "# comment\n\n  hostssl  app,\"all\"  alice, bob  10.0.0.0/8  scram-sha-256 # why\n\
                hostnossl all all ::1/128 reject\nhost all all all trust\n";
    let rules = Rules::parse(text, "hba.conf").expect("valid");
    assert_eq!(rules.rules.len(), 3);
    let first = &rules.rules[0];
    assert_eq!(first.line_number, 3);
    assert_eq!(first.connection_type, ConnectionType::HostSsl);
    assert_eq!(first.databases, Names::List(vec!["app".into(), "all".into()]));
    assert_eq!(first.users, Names::List(vec!["alice".into(), "bob".into()]));
    assert_eq!(first.method, Method::ScramSha256);
    assert_eq!(rules.rules[1].to_string(), "hostnossl all all ::1/128 reject");
    assert_eq!(rules.rules[2].address, AddressRange::All);
}

#[test]
fn first_match_wins_over_type_database_user_and_address() {
    let text = "host all mallory all reject\nhostssl all all all scram-sha-256\n\
                host app,reports all 10.0.0.0/8 trust\nhost all all 127.0.0.1/32 trust\n";
    let rules = Rules::parse(text, "hba.conf").expect("valid");
    let line = |client: Client| rules.find(&client).map(|rule| rule.line_number);
    assert_eq!(line(client("127.0.0.1", true, "app", "mallory")), Some(1));
    assert_eq!(line(client("127.0.0.1", true, "app", "alice")), Some(2));
    assert_eq!(line(client("10.1.1.1", false, "reports", "alice")), Some(3));
    assert_eq!(line(client("10.1.1.1", false, "other", "alice")), None);
    assert_eq!(line(client("127.0.0.1", false, "other", "alice")), Some(4));
    // Names are case-sensitive.
    assert_eq!(line(client("10.1.1.1", false, "App", "alice")), None);
}

#[test]
fn refusals_name_the_line() {
    let cases = [
        ("local all all trust", "\"local\" is not supported"),
        ("hosts all all all trust", "invalid connection type \"hosts\""),
        ("host all all 10.0.0.0/8 md5", "\"md5\" is not supported"),
        ("host all all 10.0.0.0/8 password", "\"password\" is not supported"),
        ("host all all 10.0.0.0/8 peer", "\"peer\" is not supported"),
        ("host all all 10.0.0.0/8 magic", "invalid authentication method \"magic\""),
        ("host all all 10.0.0.0/8", "end-of-line before authentication method"),
        ("host all", "end-of-line before role specification"),
        ("host", "end-of-line before database specification"),
        ("host all all 10.0.0.0 255.0.0.0 trust", "needs a CIDR mask"),
        ("host all all all trust clientcert=1", "options are not supported"),
        ("host sameuser all all trust", "\"sameuser\" is not supported"),
        ("host all +admins all trust", "not supported"),
        ("host all,app all all trust", "\"all\" cannot be part of a list"),
        ("host \"app all all all trust", "unterminated quoted string"),
    ];
    for (line, reason) in cases {
        let error = parse_error(&format!("# first\nhost all all all reject\n{line}\n"));
        assert!(error.starts_with("hba_file /etc/hba.conf, line 3: "), "{line}: {error}");
        assert!(error.contains(reason), "{line}: {error}");
    }
    assert!(parse_error("# nothing\n\n").contains("contains no entries"));
}

#[test]
fn shorthands_are_rule_sets() {
    let trust_loopback = Rules::shorthand("trust-loopback").expect("valid");
    let method = |rules: &Rules, text: &str| {
        rules.find(&client(text, false, "tierdb", "tierdb")).map(|rule| rule.method)
    };
    assert_eq!(method(&trust_loopback, "127.0.0.1"), Some(Method::Trust));
    assert_eq!(method(&trust_loopback, "::1"), Some(Method::Trust));
    assert_eq!(method(&trust_loopback, "127.0.0.2"), Some(Method::ScramSha256));
    assert_eq!(method(&trust_loopback, "192.0.2.2"), Some(Method::ScramSha256));
    let scram = Rules::shorthand("scram-sha-256").expect("valid");
    assert_eq!(method(&scram, "127.0.0.1"), Some(Method::ScramSha256));
    let trust = Rules::shorthand("trust").expect("valid");
    assert_eq!(method(&trust, "192.0.2.2"), Some(Method::Trust));
    assert!(Rules::shorthand("md5").expect_err("unknown").contains("unknown auth=md5"));
}

#[test]
fn refusals_use_postgresql_wording() {
    let rules = Rules::parse("host all mallory all reject\nhost app all 10.0.0.0/8 trust\n", "f")
        .expect("valid");
    let refused = |client: Client| decide(&rules, &client).expect_err("refused");
    assert_eq!(
        refused(client("::ffff:10.1.2.3", true, "other", "alice")),
        "no pg_hba.conf entry for host \"10.1.2.3\", user \"alice\", database \"other\", SSL encryption"
    );
    assert_eq!(
        refused(client("2001:db8::1", false, "app", "mallory")),
        "pg_hba.conf rejects connection for host \"2001:db8::1\", user \"mallory\", database \"app\", no encryption"
    );
    assert_eq!(decide(&rules, &client("10.1.2.3", false, "app", "alice")), Ok(Method::Trust));
}
