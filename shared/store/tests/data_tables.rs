//! Data tables against moto: name races, insert limits and validation,
//! like/ilike and the other filters, sort and paging, update/delete/upsert,
//! column changes.

mod data_support;

use serde_json::{json, Map, Value};
use store::data::data_tables::{ColumnType, Condition, Filter, FilterKind, NewColumn, Op, RowQuery, SortDirection};
use store::data::DataTables;
use store::StoreError;

fn cols(spec: &[(&str, ColumnType)]) -> Vec<NewColumn> {
    spec.iter().map(|(n, t)| NewColumn { name: (*n).into(), kind: *t }).collect()
}

fn row(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("row must be an object"),
    }
}

fn cond(col: &str, op: Op, value: Value) -> Condition {
    Condition { column_name: col.into(), condition: op, value }
}

async fn names(tables: &DataTables, id: &str, filter: Filter) -> Vec<String> {
    let page = tables.query(id, &RowQuery { filter: Some(filter), ..Default::default() }).await.unwrap();
    page.data.iter().map(|r| r["name"].as_str().unwrap_or("<null>").to_owned()).collect()
}

#[tokio::test]
async fn create_validates_and_names_race_to_one_winner() {
    let (_env, data) = data_support::data().await;
    let (_alice, home) = data_support::user(&data, "alice").await;
    let t = &data.data_tables;
    assert!(t.create(&home.id, "", &cols(&[("a", ColumnType::String)])).await.is_err());
    assert!(t.create(&home.id, &"n".repeat(129), &cols(&[("a", ColumnType::String)])).await.is_err());
    assert!(t.create(&home.id, "ok", &[]).await.is_err(), "at least one column");
    for bad in ["1a", "a-b", "id", &"a".repeat(64)] {
        assert!(
            matches!(t.create(&home.id, "ok", &cols(&[(bad, ColumnType::String)])).await, Err(StoreError::Invalid(_))),
            "{bad}"
        );
    }
    assert!(t.create(&home.id, "ok", &cols(&[("a", ColumnType::String), ("A", ColumnType::Number)])).await.is_err());
    assert!(t.create("no-such-project", "ok", &cols(&[("a", ColumnType::String)])).await.is_err());

    for round in 0..3 {
        let name = format!("Leads {round}");
        let racers = (0..8).map(|_| {
            let (t, p, name) = (t.clone(), home.id.clone(), name.clone());
            tokio::spawn(async move { t.create(&p, &name, &cols(&[("email", ColumnType::String)])).await })
        });
        let results: Vec<_> = futures::future::join_all(racers).await.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "round {round}: {results:?}");
        assert!(results.iter().filter_map(|r| r.as_ref().err()).all(|e| matches!(e, StoreError::Conflict(_))));
        let found = t.search(std::slice::from_ref(&home.id), Some(&name), None).await.unwrap();
        assert_eq!(found.count, 1, "exactly one table carries the name");
    }

    // Renames race for a name the same way, and free the old one.
    let a = t.create(&home.id, "A", &cols(&[("x", ColumnType::String)])).await.unwrap();
    let b = t.create(&home.id, "B", &cols(&[("x", ColumnType::String)])).await.unwrap();
    let (ra, rb) = tokio::join!(t.rename(&a.id, "C"), t.rename(&b.id, "C"));
    assert_eq!([ra.is_ok(), rb.is_ok()].iter().filter(|x| **x).count(), 1);
    let loser = if ra.is_ok() { &b } else { &a };
    assert_eq!(t.get(&loser.id).await.unwrap().unwrap().name, loser.name, "the loser keeps its name");
    let winner_old = if ra.is_ok() { "A" } else { "B" };
    t.create(&home.id, winner_old, &cols(&[("x", ColumnType::String)])).await.expect("old name is free again");
    assert!(matches!(t.rename(&loser.id, "C").await, Err(StoreError::Conflict(_))));

    // Deleting frees the name.
    let c = t
        .search(std::slice::from_ref(&home.id), Some("C"), None)
        .await
        .unwrap()
        .data
        .into_iter()
        .find(|x| x.name == "C")
        .unwrap();
    t.delete(&c.id).await.unwrap();
    t.create(&home.id, "C", &cols(&[("x", ColumnType::String)])).await.unwrap();
}

#[tokio::test]
async fn inserts_are_validated_before_anything_is_written() {
    let (_env, data) = data_support::data().await;
    let (_alice, home) = data_support::user(&data, "alice").await;
    let t = &data.data_tables;
    let table = t
        .create(
            &home.id,
            "People",
            &cols(&[
                ("name", ColumnType::String),
                ("age", ColumnType::Number),
                ("vip", ColumnType::Boolean),
                ("born", ColumnType::Date),
            ]),
        )
        .await
        .unwrap();

    let too_many: Vec<_> = (0..1001).map(|i| row(json!({"name": format!("p{i}")}))).collect();
    let err = t.insert_rows(&table.id, &too_many).await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)) && err.to_string().contains("1000"), "{err}");
    assert!(t.insert_rows(&table.id, &[]).await.is_err());
    assert_eq!(t.count_rows(&table.id).await.unwrap(), 0);

    // Row 2 has a number where a string belongs: the error names row and
    // column, and rows 0 and 1 are not written either.
    let batch = vec![
        row(json!({"name": "Ann", "age": 31})),
        row(json!({"name": "Bob", "vip": true})),
        row(json!({"name": 42})),
    ];
    let err = t.insert_rows(&table.id, &batch).await.unwrap_err().to_string();
    assert!(err.contains("row 2") && err.contains("\"name\"") && err.contains("expected string"), "{err}");
    let err = t.insert_rows(&table.id, &[row(json!({"nickname": "x"}))]).await.unwrap_err().to_string();
    assert!(err.contains("row 0") && err.contains("unknown column"), "{err}");
    let err = t.insert_rows(&table.id, &[row(json!({"born": "last tuesday"}))]).await.unwrap_err().to_string();
    assert!(err.contains("date"), "{err}");
    assert!(t.insert_rows(&table.id, &[row(json!({"id": 5}))]).await.is_err(), "system columns are not writable");
    assert_eq!(t.count_rows(&table.id).await.unwrap(), 0, "nothing written");

    // A full batch of 1000 goes in; ids are sequential; types round-trip.
    let full: Vec<_> = (0..1000)
        .map(|i| row(json!({"name": format!("p{i}"), "age": i, "vip": i % 2 == 0, "born": "2000-01-02"})))
        .collect();
    let rows = t.insert_rows(&table.id, &full).await.unwrap();
    assert_eq!(rows.len(), 1000);
    assert_eq!(t.count_rows(&table.id).await.unwrap(), 1000);
    let first = t.query(&table.id, &RowQuery { limit: Some(2), ..Default::default() }).await.unwrap();
    assert_eq!(first.count, 1000);
    assert_eq!(first.data[0]["id"], json!(1));
    assert_eq!(first.data[1]["age"], json!(1));
    assert_eq!(first.data[0]["vip"], json!(true));
    assert_eq!(first.data[0]["born"], json!("2000-01-02T00:00:00.000Z"));
    assert!(first.data[0]["createdAt"].is_string());
    // Cursor paging in id order covers every row once.
    let mut seen = 0;
    let mut cursor = None;
    loop {
        let page = t
            .query(&table.id, &RowQuery { limit: Some(300), cursor: cursor.clone(), ..Default::default() })
            .await
            .unwrap();
        seen += page.data.len();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, 1000);
}

#[tokio::test]
async fn like_and_ilike_table_driven() {
    let (_env, data) = data_support::data().await;
    let (_alice, home) = data_support::user(&data, "alice").await;
    let t = &data.data_tables;
    let table = t.create(&home.id, "Words", &cols(&[("name", ColumnType::String)])).await.unwrap();
    let words = ["Hello World", "hello world", "HELLO", "yellow", "50% off", "500 off", "a_b", "axb"];
    t.insert_rows(&table.id, &words.iter().map(|w| row(json!({"name": w}))).collect::<Vec<_>>()).await.unwrap();
    t.insert_rows(&table.id, &[row(json!({"name": null}))]).await.unwrap();

    let cases: &[(Op, &str, &[&str])] = &[
        // Bare values are contains-matches.
        (Op::Like, "ello", &["Hello World", "hello world", "yellow"]),
        (Op::Like, "World", &["Hello World"]),
        (Op::Ilike, "world", &["Hello World", "hello world"]),
        (Op::Ilike, "HELLO", &["Hello World", "hello world", "HELLO"]),
        (Op::Like, "HELLO", &["HELLO"]),
        // Values with % keep their pattern (anchored).
        (Op::Like, "Hello%", &["Hello World"]),
        (Op::Ilike, "hello%", &["Hello World", "hello world", "HELLO"]),
        (Op::Like, "%world", &["hello world"]),
        (Op::Ilike, "%LOW", &["yellow"]),
        (Op::Like, "ello", &["Hello World", "hello world", "yellow"]),
        (Op::Like, "h%d", &["hello world"]),
        // `_` is one character, `\` escapes.
        (Op::Like, "a_b", &["a_b", "axb"]),
        (Op::Like, "a\\_b", &["a_b"]),
        (Op::Like, "50\\%%", &["50% off"]),
        (Op::Like, "nothing", &[]),
    ];
    for (op, pattern, want) in cases {
        let got = names(t, &table.id, Filter::and(vec![cond("name", *op, json!(pattern))])).await;
        assert_eq!(got, *want, "{op:?} {pattern:?}");
    }
    // like on a non-string column, and an unknown column, are errors.
    let t2 = t.create(&home.id, "Nums", &cols(&[("n", ColumnType::Number)])).await.unwrap();
    let q = RowQuery { filter: Some(Filter::and(vec![cond("n", Op::Like, json!("1"))])), ..Default::default() };
    assert!(t.query(&t2.id, &q).await.is_err());
    let q = RowQuery { filter: Some(Filter::and(vec![cond("nope", Op::Eq, json!("1"))])), ..Default::default() };
    assert!(t.query(&table.id, &q).await.is_err());
}

#[tokio::test]
async fn comparisons_sort_update_delete_upsert_and_columns() {
    let (_env, data) = data_support::data().await;
    let (_alice, home) = data_support::user(&data, "alice").await;
    let t = &data.data_tables;
    let table = t
        .create(
            &home.id,
            "Deals",
            &cols(&[
                ("name", ColumnType::String),
                ("amount", ColumnType::Number),
                ("won", ColumnType::Boolean),
                ("closed", ColumnType::Date),
            ]),
        )
        .await
        .unwrap();
    t.insert_rows(
        &table.id,
        &[
            row(json!({"name": "a", "amount": 10, "won": true, "closed": "2024-01-01T00:00:00Z"})),
            row(json!({"name": "b", "amount": 20.5, "won": false, "closed": "2024-02-01T00:00:00Z"})),
            row(json!({"name": "c", "amount": 30, "won": true})),
            row(json!({"name": "d", "amount": null, "won": null})),
            row(json!({"name": ""})),
        ],
    )
    .await
    .unwrap();
    let f = |c: Vec<Condition>| Filter::and(c);
    assert_eq!(names(t, &table.id, f(vec![cond("amount", Op::Gt, json!(10))])).await, ["b", "c"]);
    assert_eq!(names(t, &table.id, f(vec![cond("amount", Op::Gte, json!(10))])).await, ["a", "b", "c"]);
    assert_eq!(names(t, &table.id, f(vec![cond("amount", Op::Lt, json!(20.5))])).await, ["a"]);
    assert_eq!(names(t, &table.id, f(vec![cond("amount", Op::Lte, json!(20.5))])).await, ["a", "b"]);
    assert_eq!(names(t, &table.id, f(vec![cond("won", Op::Eq, json!(true))])).await, ["a", "c"]);
    assert_eq!(
        names(t, &table.id, f(vec![cond("won", Op::Neq, json!(true))])).await,
        ["b", "d", ""].map(|s| if s.is_empty() { "" } else { s })
    );
    assert_eq!(names(t, &table.id, f(vec![cond("closed", Op::Gt, json!("2024-01-15"))])).await, ["b"]);
    assert_eq!(names(t, &table.id, f(vec![cond("amount", Op::IsEmpty, Value::Null)])).await, ["d", ""]);
    assert_eq!(names(t, &table.id, f(vec![cond("name", Op::IsEmpty, Value::Null)])).await, [""]);
    assert_eq!(names(t, &table.id, f(vec![cond("amount", Op::IsNotEmpty, Value::Null)])).await, ["a", "b", "c"]);
    assert_eq!(names(t, &table.id, f(vec![cond("id", Op::Eq, json!(2))])).await, ["b"]);
    let or = Filter {
        kind: FilterKind::Or,
        conditions: vec![cond("name", Op::Eq, json!("a")), cond("amount", Op::Eq, json!(30))],
    };
    assert_eq!(names(t, &table.id, or).await, ["a", "c"]);
    assert!(t
        .query(
            &table.id,
            &RowQuery { filter: Some(f(vec![cond("amount", Op::Gt, json!("ten"))])), ..Default::default() }
        )
        .await
        .is_err());

    // Sort (nulls last ascending), offset, cursor.
    let sorted = t
        .query(&table.id, &RowQuery { sort_by: Some(("amount".into(), SortDirection::Desc)), ..Default::default() })
        .await
        .unwrap();
    let order: Vec<_> = sorted.data.iter().map(|r| r["name"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(order, ["d", "", "c", "b", "a"]);
    let page = t
        .query(
            &table.id,
            &RowQuery {
                sort_by: Some(("amount".into(), SortDirection::Asc)),
                limit: Some(2),
                offset: 1,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.data.iter().map(|r| r["name"].clone()).collect::<Vec<_>>(), [json!("b"), json!("c")]);
    let p1 = t
        .query(
            &table.id,
            &RowQuery { sort_by: Some(("amount".into(), SortDirection::Asc)), limit: Some(3), ..Default::default() },
        )
        .await
        .unwrap();
    let p2 = t
        .query(
            &table.id,
            &RowQuery {
                sort_by: Some(("amount".into(), SortDirection::Asc)),
                limit: Some(3),
                cursor: p1.next_cursor.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(p1.data.len() + p2.data.len(), 5);
    assert!(p2.next_cursor.is_none());

    // Update rows matching a filter; null removes a value.
    let updated = t
        .update_rows(&table.id, &f(vec![cond("won", Op::Eq, json!(true))]), &row(json!({"amount": 99, "closed": null})))
        .await
        .unwrap();
    assert_eq!(updated.len(), 2);
    assert!(updated.iter().all(|r| r["amount"] == json!(99) && r["closed"].is_null()));
    assert!(t.update_rows(&table.id, &Filter::default(), &row(json!({"amount": 1}))).await.is_err(), "filter required");
    assert!(t
        .update_rows(&table.id, &f(vec![cond("name", Op::Eq, json!("a"))]), &row(json!({"amount": "x"})))
        .await
        .is_err());

    // Delete needs a non-empty filter.
    assert!(t.delete_rows(&table.id, &Filter::default()).await.is_err());
    let deleted = t.delete_rows(&table.id, &f(vec![cond("amount", Op::IsEmpty, Value::Null)])).await.unwrap();
    assert_eq!(deleted.len(), 2);
    assert_eq!(t.count_rows(&table.id).await.unwrap(), 3);

    // Upsert: updates when something matches, inserts otherwise.
    let up = t
        .upsert(&table.id, &f(vec![cond("name", Op::Eq, json!("b"))]), &row(json!({"name": "b", "amount": 1})))
        .await
        .unwrap();
    assert!(!up.inserted && up.rows[0]["amount"] == json!(1));
    let up = t
        .upsert(&table.id, &f(vec![cond("name", Op::Eq, json!("z"))]), &row(json!({"name": "z", "amount": 2})))
        .await
        .unwrap();
    assert!(up.inserted && up.rows[0]["name"] == json!("z"));

    // Columns: add, rename (rows follow), delete (values never reappear).
    let col = t.add_column(&table.id, &NewColumn { name: "owner".into(), kind: ColumnType::String }).await.unwrap();
    assert!(t.add_column(&table.id, &NewColumn { name: "OWNER".into(), kind: ColumnType::String }).await.is_err());
    t.update_rows(&table.id, &f(vec![cond("name", Op::Eq, json!("z"))]), &row(json!({"owner": "zed"}))).await.unwrap();
    t.rename_column(&table.id, &col.id, "seller").await.unwrap();
    assert_eq!(names(t, &table.id, f(vec![cond("seller", Op::Eq, json!("zed"))])).await, ["z"]);
    t.delete_column(&table.id, &col.id).await.unwrap();
    t.add_column(&table.id, &NewColumn { name: "seller".into(), kind: ColumnType::String }).await.unwrap();
    assert_eq!(names(t, &table.id, f(vec![cond("seller", Op::IsNotEmpty, Value::Null)])).await, Vec::<String>::new());
    let schema = t.get(&table.id).await.unwrap().unwrap();
    assert_eq!(
        schema.columns.iter().map(|c| c.index).collect::<Vec<_>>(),
        (0..schema.columns.len()).collect::<Vec<_>>()
    );
    let old_name = schema.name.clone();
    let renamed = t.rename(&table.id, "Deals 2024").await.unwrap();
    assert_eq!(renamed.name, "Deals 2024");
    let project = &renamed.project_id;
    assert_eq!(t.by_name(project, "Deals 2024").await.unwrap().map(|x| x.id), Some(table.id.clone()));
    assert!(t.by_name(project, &old_name).await.unwrap().is_none(), "the old name no longer finds it");
    assert!(t.by_name(project, "deals 2024").await.unwrap().is_none(), "names match exactly");
}
