//! `/dashboard` on the metrics listener (design 015), rendered by a headless Chromium: after
//! some load the page draws its six charts with data points from the capacity runner's
//! history. Chromium missing fails the test (scripts/install-deps.sh installs it).

use crate::server_support;

use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

use server_support::TestServer;

const BROWSERS: &[&str] = &["chromium", "chromium-browser", "google-chrome"];

fn browser() -> Option<&'static str> {
    BROWSERS.iter().copied().find(|browser| {
        Command::new(browser).arg("--version").output().is_ok_and(|output| output.status.success())
    })
}

fn get(server: &TestServer, path: &str) -> String {
    let mut socket =
        std::net::TcpStream::connect(("127.0.0.1", server.metrics_port)).expect("metrics");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    socket.write_all(request.as_bytes()).expect("request");
    let mut reply = String::new();
    socket.read_to_string(&mut reply).expect("reply");
    reply
}

/// The number in `name="..."` of the element whose attributes contain `marker`.
fn attribute_after(dom: &str, marker: &str, name: &str) -> Option<u64> {
    let element = &dom[dom.find(marker)?..];
    let element = &element[..element.find('>')?];
    let value = &element[element.find(&format!("{name}=\""))? + name.len() + 2..];
    value[..value.find('"')?].parse().ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_renders_its_charts_with_data_points() {
    // A missing browser fails the test (as a missing PostgreSQL fails the slt suite): a
    // skip would pass without checking anything.
    let browser = browser().expect("chromium is missing: scripts/install-deps.sh installs it");
    let flags = ["--min-capacity", "0.5", "--max-capacity", "4", "--capacity-unit", "8MB"];
    let server = TestServer::start(&flags);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE dash (id int PRIMARY KEY, v text);
             INSERT INTO dash SELECT g, repeat('x', 100) FROM generate_series(1, 20000) AS g;",
        )
        .await
        .expect("load");
    for id in 1..200 {
        client.query_one("SELECT v FROM dash WHERE id = $1", &[&id]).await.expect("select");
    }
    // A few evaluations (250 ms apart) after the load.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let json = get(&server, "/dashboard.json");
    assert!(json.starts_with("HTTP/1.1 200") && json.contains("\"points\":[{\"t\":"), "{json}");
    assert!(json.contains("\"max\":4"), "{json}");
    let url = format!("http://127.0.0.1:{}/dashboard", server.metrics_port);
    let output = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000"])
        .args(["--dump-dom", &url])
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&output.stdout);
    assert_eq!(attribute_after(&dom, "id=\"summary\"", "data-charts"), Some(6), "{dom}");
    let points = attribute_after(&dom, "id=\"summary\"", "data-points").expect("points");
    assert!(points >= 2, "{points} points: {dom}");
    for series in ["current", "working_set", "dram_hit", "sps"] {
        let marker = format!("data-series=\"{series}\"");
        let drawn = attribute_after(&dom, &marker, "data-points").unwrap_or(0);
        assert!(drawn >= 1, "{series}: no point drawn: {dom}");
    }
    assert!(dom.contains("rendered 6 charts") && dom.contains("max 4)"), "{dom}");
}
