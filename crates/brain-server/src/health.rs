//! `brain healthcheck`: one plain HTTP/1.1 GET, so the runtime image needs no
//! curl or wget for its HEALTHCHECK.

use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn check(url: &str) -> anyhow::Result<()> {
    let rest = url
        .strip_prefix("http://")
        .context("healthcheck URL must start with http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let io = async {
        let mut stream = TcpStream::connect(authority).await?;
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut head = vec![0u8; 64];
        let n = stream.read(&mut head).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&head[..n]).into_owned())
    };
    let head = tokio::time::timeout(Duration::from_secs(5), io)
        .await
        .context("healthcheck timed out")?
        .with_context(|| format!("cannot reach {authority}"))?;
    if head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200") {
        Ok(())
    } else {
        bail!("not ready: {}", head.lines().next().unwrap_or(""))
    }
}
