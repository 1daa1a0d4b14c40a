//! `brain export` and `brain import`: a tenant's rows as lines of canonical
//! JSON (brain_store_sqlx::sql::export), streamed through a buffered file, so
//! memory stays bounded whatever the tenant's size.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use anyhow::Context;
use brain_core::error::{DomainError, ErrorCode, StoreError};
use brain_core::ids::TenantId;
use brain_core::store::StoreSettings;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::serve::open_store;

/// Lines longer than this are not an export brain wrote (a row holds at most
/// a few bodies of 256 KiB).
const MAX_LINE: usize = 8 * 1024 * 1024;

/// A progress line on a terminal's stderr; nothing when stderr is not one.
fn progress(len: Option<u64>, what: &str) -> ProgressBar {
    let bar = match len {
        Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let style = match len {
        Some(_) => ProgressStyle::with_template(&format!(
            "{what} {{bar:30}} {{bytes}}/{{total_bytes}} {{elapsed}}"
        )),
        None => ProgressStyle::with_template(&format!("{what} {{pos}} rows {{elapsed}}")),
    };
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}

pub async fn export(tenant: &TenantId, output: Option<&Path>, url: &str) -> anyhow::Result<()> {
    let store = open_store(url, StoreSettings::default()).await?;
    if !store
        .tenant_exists(tenant)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
    {
        anyhow::bail!("no tenant {tenant} in this database");
    }
    let sink: Box<dyn Write + Send> = match output {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    let bar = progress(None, "exporting");
    let mut write = |v: serde_json::Value| -> Result<(), StoreError> {
        let line = brain_core::digest::canonical_json(&v);
        out.write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| StoreError::Backend(format!("cannot write the export: {e}")))?;
        bar.inc(1);
        Ok(())
    };
    let rows = store
        .export_tenant(tenant, &mut write)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    out.flush().context("cannot write the export")?;
    bar.finish_and_clear();
    eprintln!("exported tenant={tenant} rows={rows}");
    Ok(())
}

pub async fn import(tenant: &TenantId, input: Option<&Path>, url: &str) -> anyhow::Result<()> {
    let (source, len): (Box<dyn Read + Send>, Option<u64>) = match input {
        Some(path) => {
            let f = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let len = f.metadata().ok().map(|m| m.len());
            (Box::new(f), len)
        }
        None => (Box::new(std::io::stdin()), None),
    };
    let bar = progress(len, "importing");
    let mut reader = BufReader::with_capacity(1 << 20, bar.wrap_read(source));
    let store = open_store(url, StoreSettings::default()).await?;
    let mut buf = String::new();
    let mut lines = std::iter::from_fn(move || {
        buf.clear();
        let read = (&mut reader).take(MAX_LINE as u64 + 1).read_line(&mut buf);
        match read {
            Ok(0) => None,
            Ok(_) if buf.len() > MAX_LINE => Some(Err(refused("a line longer than 8 MiB"))),
            Ok(_) => Some(
                serde_json::from_str(buf.trim_end_matches('\n'))
                    .map_err(|e| refused(&format!("a line that is not JSON ({e})"))),
            ),
            Err(e) => Some(Err(StoreError::Backend(format!(
                "cannot read the export: {e}"
            )))),
        }
    });
    let rows = store
        .import_tenant(tenant, &mut lines)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    bar.finish_and_clear();
    eprintln!("imported tenant={tenant} rows={rows}");
    Ok(())
}

fn refused(why: &str) -> StoreError {
    StoreError::Domain(DomainError::new(
        ErrorCode::InvalidArgument,
        format!("{why}; nothing was imported"),
    ))
}
