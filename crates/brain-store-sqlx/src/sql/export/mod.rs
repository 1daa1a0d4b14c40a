//! A tenant's data as one line of canonical JSON per row, the same from
//! either store, and back into an empty tenant of either store: `brain
//! export` and `brain import`.
//!
//! The format (version [`FORMAT`]): a header line
//! `{"brain_export":1,"brain_version":…,"tenant":…}`, then one line
//! `{"row":{…},"table":…}` per row, table by table in [`TABLES`]' order and
//! each table by its primary key (bytewise), then `{"end":true,"rows":N}`.
//! Keys are sorted at every depth and times are RFC 3339 in UTC with
//! microseconds, so two exports of the same data are byte-identical whatever
//! the store. Receipts are carried as they were: nothing is re-hashed or
//! re-numbered, and the chain verifies after an import. What a store derives
//! (search indexes, the usage counter) is rebuilt by the import's inserts.

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::SqlTx;
use super::{Conn, Finish, Param, Row, Scope};
use brain_core::error::{DomainError, ErrorCode, StoreError};
use brain_core::ids::TenantId;
use brain_core::store::Portable;

/// The format's version, in the header.
pub const FORMAT: i64 = 1;

/// Rows read per statement: a page of bodies of at most 256 KiB each.
const PAGE: i64 = 100;

mod tables;
use tables::Kind::{self, *};
use tables::{READ_AS, TABLES, Table};

fn kind_of(t: &Table, col: &str) -> Kind {
    t.columns
        .iter()
        .find(|(c, _)| *c == col)
        .map_or(Text, |(_, k)| *k)
}

/// One page of `t`'s rows of the tenant after the key `after`, in key order.
fn page_sql(sql: &super::Sql, t: &Table, after: bool) -> String {
    let p = sql.placeholder;
    let select: Vec<String> = t
        .columns
        .iter()
        .map(|(c, k)| {
            let read_as = READ_AS.iter().find(|(n, col, _)| *n == t.name && col == c);
            match (read_as, k) {
                (Some((_, _, e)), _) => format!("{e} AS {c}"),
                (None, Date) => format!("CAST({c} AS TEXT) AS {c}"),
                (None, _) => (*c).to_owned(),
            }
        })
        .collect();
    let sorted = |c: &str| match kind_of(t, c) {
        Text => format!("{c}{}", sql.collate_binary),
        Date => format!("CAST({c} AS TEXT){}", sql.collate_binary),
        _ => c.to_owned(),
    };
    let order: Vec<String> = t.key.iter().map(|c| sorted(c)).collect();
    let mut q = format!(
        "SELECT {} FROM {} WHERE tenant_id = {p}1",
        select.join(", "),
        t.name
    );
    if after && !t.key.is_empty() {
        let params: Vec<String> = (0..t.key.len()).map(|i| format!("{p}{}", i + 2)).collect();
        q.push_str(&format!(
            " AND ({}) > ({})",
            order.join(", "),
            params.join(", ")
        ));
    }
    if !order.is_empty() {
        q.push_str(&format!(" ORDER BY {}", order.join(", ")));
    }
    q.push_str(&format!(" LIMIT {PAGE}"));
    q
}

fn insert_sql(sql: &super::Sql, t: &Table) -> String {
    let p = sql.placeholder;
    let values: Vec<String> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, (_, k))| {
            let at = format!("{p}{}", i + 1);
            match k {
                Date => sql.date_param.replace("{}", &at),
                _ => at,
            }
        })
        .collect();
    let names: Vec<&str> = t.columns.iter().map(|(c, _)| *c).collect();
    format!(
        "INSERT INTO {} ({}) VALUES ({})",
        t.name,
        names.join(", "),
        values.join(", ")
    )
}

fn time_text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn read_row(t: &Table, r: &dyn Row) -> Result<Value, StoreError> {
    let mut row = Map::new();
    for (c, k) in t.columns {
        let v = match k {
            Text | Date => r.opt_text(c)?.map(Value::String),
            Int => r.opt_int(c)?.map(Value::from),
            Flag => r.opt_flag(c)?.map(Value::Bool),
            Uuid => r
                .opt_uuid(c)?
                .map(|u| Value::String(u.hyphenated().to_string())),
            Time => r.opt_time(c)?.map(|t| Value::String(time_text(t))),
            Json => r.opt_json(c)?,
            Strings => r.opt_strings(c)?.map(|s| json!(s)),
        };
        row.insert((*c).to_owned(), v.unwrap_or(Value::Null));
    }
    Ok(Value::Object(row))
}

/// The key of a row just read, as the next page's parameters.
fn key_of(t: &Table, row: &Value) -> Vec<Owned> {
    t.key
        .iter()
        .map(|c| {
            let v = &row[*c];
            match kind_of(t, c) {
                Int => Owned::Int(v.as_i64()),
                Uuid => Owned::Uuid(v.as_str().and_then(|s| uuid::Uuid::parse_str(s).ok())),
                _ => Owned::Text(v.as_str().map(str::to_owned)),
            }
        })
        .collect()
}

/// A parameter's value, owned while its statement runs.
enum Owned {
    Text(Option<String>),
    Int(Option<i64>),
    Flag(bool),
    Uuid(Option<Uuid>),
    Time(Option<DateTime<Utc>>),
    Json(Option<Value>),
    Strings(Vec<String>),
}

impl Owned {
    fn param(&self) -> Param<'_> {
        match self {
            Owned::Text(v) => Param::Text(v.as_deref()),
            Owned::Int(v) => Param::Int(*v),
            Owned::Flag(v) => Param::Flag(*v),
            Owned::Uuid(v) => Param::Uuid(*v),
            Owned::Time(v) => Param::Time(*v),
            Owned::Json(v) => Param::Json(v.as_ref()),
            Owned::Strings(v) => Param::Strings(v),
        }
    }
}

fn bad(line: u64, why: impl std::fmt::Display) -> StoreError {
    StoreError::Domain(DomainError::new(
        ErrorCode::InvalidArgument,
        format!("the export's line {line}: {why}; nothing was imported"),
    ))
}

/// A row of the file as its insert's parameters, checked against the table.
fn row_params(t: &Table, row: &Map<String, Value>, line: u64) -> Result<Vec<Owned>, StoreError> {
    if let Some(extra) = row.keys().find(|k| !t.columns.iter().any(|(c, _)| c == k)) {
        return Err(bad(line, format!("{} has no column {extra}", t.name)));
    }
    let mut out = Vec::with_capacity(t.columns.len());
    for (c, k) in t.columns {
        let v = row.get(*c).unwrap_or(&Value::Null);
        let wrong = || bad(line, format!("{}.{c} is not a {k:?}", t.name));
        let owned = match (k, v) {
            (Text | Date, Value::Null) => Owned::Text(None),
            (Text | Date, Value::String(s)) => Owned::Text(Some(s.clone())),
            (Int, Value::Null) => Owned::Int(None),
            (Int, Value::Number(n)) => Owned::Int(Some(n.as_i64().ok_or_else(wrong)?)),
            (Flag, Value::Bool(b)) => Owned::Flag(*b),
            (Uuid, Value::Null) => Owned::Uuid(None),
            (Uuid, Value::String(s)) => {
                Owned::Uuid(Some(uuid::Uuid::parse_str(s).map_err(|_| wrong())?))
            }
            (Time, Value::Null) => Owned::Time(None),
            (Time, Value::String(s)) => Owned::Time(Some(
                DateTime::parse_from_rfc3339(s)
                    .map_err(|_| wrong())?
                    .with_timezone(&Utc),
            )),
            (Json, Value::Null) => Owned::Json(None),
            (Json, v) => Owned::Json(Some(v.clone())),
            (Strings, Value::Array(items)) => Owned::Strings(
                items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned).ok_or_else(wrong))
                    .collect::<Result<_, _>>()?,
            ),
            _ => return Err(wrong()),
        };
        out.push(owned);
    }
    Ok(out)
}

#[async_trait]
impl<S: Scope> Portable for crate::SqlStore<S> {
    async fn export_tenant(
        &self,
        tenant: &TenantId,
        sink: &mut (dyn FnMut(Value) -> Result<(), StoreError> + Send),
    ) -> Result<u64, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let sql = c.sql();
        sink(json!({
            "brain_export": FORMAT,
            "brain_version": env!("CARGO_PKG_VERSION"),
            "tenant": tenant.as_str(),
        }))?;
        let mut rows = 0u64;
        for t in TABLES {
            let mut after: Option<Vec<Owned>> = None;
            loop {
                let q = page_sql(sql, t, after.is_some());
                let mut params = vec![Param::from(tenant)];
                if let Some(key) = &after {
                    params.extend(key.iter().map(Owned::param));
                }
                let page = c.fetch_all(&q, &params).await?;
                let n = page.len();
                let mut last = None;
                for r in page {
                    let row = read_row(t, r.as_ref())?;
                    last = Some(key_of(t, &row));
                    sink(json!({"table": t.name, "row": row}))?;
                    rows += 1;
                }
                if (n as i64) < PAGE || t.key.is_empty() {
                    break;
                }
                after = last;
            }
        }
        c.finish().await?;
        sink(json!({"end": true, "rows": rows}))?;
        Ok(rows)
    }

    async fn import_tenant(
        &self,
        tenant: &TenantId,
        lines: &mut (dyn Iterator<Item = Result<Value, StoreError>> + Send),
    ) -> Result<u64, StoreError> {
        let mut tx = self.write_tx(tenant).await?;
        let sql = tx.sql();
        let held = tx.fetch_all(sql.tenant_get, &[tenant.into()]).await?.len();
        if held > 0 {
            return Err(StoreError::Domain(DomainError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "tenant {tenant} already holds data here; import only into a tenant that does not exist yet (nothing is merged)"
                ),
            )));
        }
        let mut line = 0u64;
        let mut rows = 0u64;
        let mut order = 0usize;
        let mut ended = false;
        let inserts: Vec<String> = TABLES.iter().map(|t| insert_sql(sql, t)).collect();
        for item in lines {
            let v = item?;
            line += 1;
            if ended {
                return Err(bad(line, "a line after the end"));
            }
            if line == 1 {
                check_header(&v, tenant)?;
                continue;
            }
            if v["end"] == json!(true) {
                if v["rows"] != json!(rows) {
                    return Err(bad(
                        line,
                        format!("the export says {} rows, it holds {rows}", v["rows"]),
                    ));
                }
                ended = true;
                continue;
            }
            let at = table_in_order(&v, line, order)?;
            order = at;
            let t = &TABLES[at];
            let Some(row) = v["row"].as_object() else {
                return Err(bad(line, "no row"));
            };
            if row.get("tenant_id") != Some(&json!(tenant.as_str())) {
                return Err(bad(line, "a row of another tenant"));
            }
            let owned = row_params(t, row, line)?;
            let params: Vec<Param<'_>> = owned.iter().map(Owned::param).collect();
            tx.execute(&inserts[at], &params).await?;
            rows += 1;
        }
        if !ended {
            return Err(bad(
                line,
                "the export ends early (no end line): the file is cut short",
            ));
        }
        // A body is stored once (a focus row, a session's next_focus and a
        // close's stored answer name their history row): one that names a
        // revision the file does not hold would read as no text, and a replay
        // of its close would fail, long after the import.
        if let Some(row) = tx
            .fetch_optional(sql.import_dangling, &[tenant.into()])
            .await?
        {
            let what = row.text("what")?;
            return Err(bad(
                line,
                format!(
                    "{what} names a focus revision the export does not hold: the file was edited or cut, or exported while the tenant was being written to (export while nothing writes); nothing was imported"
                ),
            ));
        }
        tx.commit(None).await?;
        Ok(rows)
    }
}

/// An export's first line: brain's format, and of this very tenant.
fn check_header(v: &Value, tenant: &TenantId) -> Result<(), StoreError> {
    if v["brain_export"] != json!(FORMAT) {
        return Err(bad(1, format!("not a brain export of format {FORMAT}")));
    }
    if v["tenant"] != json!(tenant.as_str()) {
        return Err(bad(
            1,
            format!(
                "this export is of tenant {}, not {tenant} (receipts name their tenant, so it cannot be renamed)",
                v["tenant"]
            ),
        ));
    }
    Ok(())
}

/// The place in [`TABLES`] of a row line's table, which comes no earlier
/// than the table of the line before (`order`): a row's references are
/// imported before it.
fn table_in_order(v: &Value, line: u64, order: usize) -> Result<usize, StoreError> {
    let name = v["table"].as_str().unwrap_or_default();
    let Some(at) = TABLES.iter().position(|t| t.name == name) else {
        return Err(bad(line, format!("unknown table {:?}", v["table"])));
    };
    if at < order {
        return Err(bad(
            line,
            format!("{name} comes after {}", TABLES[order].name),
        ));
    }
    Ok(at)
}
