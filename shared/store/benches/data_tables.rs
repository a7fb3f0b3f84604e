//! Data-table throughput against moto (or any endpoint in
//! `AWS_ENDPOINT_URL`): rows inserted per second in batches of 1,000, and
//! filtered query time at 10k and 100k rows, with the DynamoDB requests
//! each operation costs.
//!
//! `AWS_ENDPOINT_URL=http://127.0.0.1:5000 cargo bench -p store --bench data_tables`
//! (`BENCH_MAX_ROWS=10000` stops after the first size).

use serde_json::{json, Map, Value};
use std::time::Instant;
use store::data::data_tables::{ColumnType, Condition, Filter, NewColumn, Op, RowQuery, SortDirection};
use store::data::InstanceData;
use store::testing::TestEnv;

fn rows(from: usize, n: usize) -> Vec<Map<String, Value>> {
    (from..from + n)
        .map(|i| {
            let v = json!({
                "email": format!("user{i}@example{}.com", i % 50),
                "name": format!("Customer {i}"),
                "score": (i * 7919) % 1000,
                "active": i % 3 != 0,
                "signedUp": format!("2024-{:02}-{:02}", i % 12 + 1, i % 28 + 1),
            });
            match v {
                Value::Object(m) => m,
                _ => Map::new(),
            }
        })
        .collect()
}

#[tokio::main]
async fn main() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        eprintln!("set AWS_ENDPOINT_URL (moto_server) to run this benchmark");
        return;
    }
    let max: usize = std::env::var("BENCH_MAX_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let env = TestEnv::new().await;
    let data = InstanceData::new(&env.clients, &env.config).expect("repositories");
    let (_user, project) = data
        .projects
        .create_user(&protocol::UserId("bench".into()), "bench@example.com", None, None)
        .await
        .expect("user");
    let t = &data.data_tables;
    let table = t
        .create(
            &project.id,
            "Customers",
            &[
                NewColumn { name: "email".into(), kind: ColumnType::String },
                NewColumn { name: "name".into(), kind: ColumnType::String },
                NewColumn { name: "score".into(), kind: ColumnType::Number },
                NewColumn { name: "active".into(), kind: ColumnType::Boolean },
                NewColumn { name: "signedUp".into(), kind: ColumnType::Date },
            ],
        )
        .await
        .expect("table");
    let requests = || t.rows_table().requests() + t.defs_table().requests();

    println!("data_tables benchmark against {}", env.config.endpoint_url.as_deref().unwrap_or("AWS"));
    let mut inserted = 0usize;
    for size in [10_000usize, 100_000] {
        if size > max {
            break;
        }
        let (r0, t0) = (requests(), Instant::now());
        let batches = (size - inserted) / 1000;
        while inserted < size {
            t.insert_rows(&table.id, &rows(inserted, 1000)).await.expect("insert");
            inserted += 1000;
        }
        let secs = t0.elapsed().as_secs_f64();
        let reqs = requests() - r0;
        println!(
            "insert to {size:>6} rows: {batches} batches of 1000 in {secs:.1} s = {:.0} rows/s; {reqs} requests ({:.1} per batch: 1 def read + 1 counter update + 40 BatchWriteItem)",
            (batches * 1000) as f64 / secs,
            reqs as f64 / batches as f64
        );

        let queries: [(&str, RowQuery); 4] = [
            (
                "ilike '%example7.com' (2% match), limit 100",
                RowQuery {
                    filter: Some(Filter::and(vec![cond("email", Op::Ilike, json!("%example7.com"))])),
                    ..Default::default()
                },
            ),
            (
                "score >= 900 AND active, sort score desc, limit 50",
                RowQuery {
                    filter: Some(Filter::and(vec![
                        cond("score", Op::Gte, json!(900)),
                        cond("active", Op::Eq, json!(true)),
                    ])),
                    sort_by: Some(("score".into(), SortDirection::Desc)),
                    limit: Some(50),
                    ..Default::default()
                },
            ),
            (
                "eq email (1 match)",
                RowQuery {
                    filter: Some(Filter::and(vec![cond("email", Op::Eq, json!("user4242@example42.com"))])),
                    ..Default::default()
                },
            ),
            ("no filter, first page of 100 (id order)", RowQuery::default()),
        ];
        for (label, q) in queries {
            let (r0, t0) = (requests(), Instant::now());
            let page = t.query(&table.id, &q).await.expect("query");
            println!(
                "query at {size:>6} rows: {label:<52} {:>8.1} ms, {:>4} requests, {} matches, {} returned",
                t0.elapsed().as_secs_f64() * 1000.0,
                requests() - r0,
                page.count,
                page.data.len()
            );
        }
    }
}

fn cond(col: &str, op: Op, value: Value) -> Condition {
    Condition { column_name: col.into(), condition: op, value }
}
