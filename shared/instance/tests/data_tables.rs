//! The data-table operations against moto: tables named by id or by exact
//! name, project narrowing, roles (a viewer reads but cannot write, a
//! stranger finds nothing), and rows through the same calls the agent and
//! MCP make.

use instance::data_tables::TableRef;
use instance::{Caller, Instance, InstanceError};
use protocol::UserId;
use serde_json::{json, Map, Value};
use store::data::data_tables::{ColumnType, Condition, Filter, NewColumn, Op, RowQuery};
use store::data::users_projects::ProjectRole;
use store::testing::TestEnv;

async fn setup() -> (TestEnv, Instance) {
    let env = TestEnv::new().await;
    let inst = Instance::new(&env.clients, &env.config).await.expect("instance");
    (env, inst)
}

async fn someone(inst: &Instance, name: &str) -> Caller {
    let c = Caller::new(UserId(format!("{name}-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&c).await.unwrap();
    c
}

fn cols(spec: &[(&str, ColumnType)]) -> Vec<NewColumn> {
    spec.iter().map(|(n, t)| NewColumn { name: (*n).into(), kind: *t }).collect()
}

fn row(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn filter(col: &str, op: Op, value: Value) -> Filter {
    Filter::and(vec![Condition { column_name: col.into(), condition: op, value }])
}

#[tokio::test]
async fn tables_are_found_by_id_or_exact_name_and_only_by_their_members() {
    let (_env, inst) = setup().await;
    let alice = someone(&inst, "alice").await;
    let bob = someone(&inst, "bob").await;
    let leads = inst.create_data_table(&alice, None, "Leads", &cols(&[("email", ColumnType::String)])).await.unwrap();
    let home = inst.user(&alice).await.unwrap().personal_project_id;
    assert_eq!(leads.project_id, home, "no project named: the caller's own");

    let by_id = inst.data_table(&alice, TableRef::new(&leads.id, None), "dataTable:read").await.unwrap();
    let by_name = inst.data_table(&alice, TableRef::new("Leads", None), "dataTable:read").await.unwrap();
    assert_eq!((by_id.id.as_str(), by_name.id.as_str()), (leads.id.as_str(), leads.id.as_str()));
    assert!(matches!(inst.data_table(&alice, TableRef::new("leads", None), "dataTable:read").await, Err(InstanceError::NotFound(_))));
    assert!(matches!(
        inst.data_table(&alice, TableRef::new(&leads.id, Some("another-project")), "dataTable:read").await,
        Err(InstanceError::NotFound(_))
    ));

    // A stranger learns nothing, by id or by name.
    for r in [TableRef::new(&leads.id, None), TableRef::new("Leads", None), TableRef::new(&leads.id, Some(&home))] {
        let e = inst.data_table(&bob, r, "dataTable:read").await.unwrap_err();
        assert!(matches!(e, InstanceError::NotFound(_)), "{e:?}");
    }
    assert!(matches!(inst.delete_data_table(&bob, TableRef::new(&leads.id, None)).await, Err(InstanceError::NotFound(_))));
    assert_eq!(inst.search_data_tables(&bob, Some("leads"), None, 100).await.unwrap().count, 0);

    // The same name in a team project alice shares with bob: ambiguous for alice, unique for bob.
    let team = inst.data.projects.create_team_project("Sales", &alice.user).await.unwrap();
    inst.data.projects.set_member(&team.id, &bob.user, ProjectRole::Viewer).await.unwrap();
    let shared = inst.create_data_table(&alice, Some(&team.id), "Leads", &cols(&[("email", ColumnType::String)])).await.unwrap();
    let e = inst.data_table(&alice, TableRef::new("Leads", None), "dataTable:read").await.unwrap_err();
    assert!(matches!(&e, InstanceError::Invalid(m) if m.contains("more than one") && m.contains(&shared.id)), "{e:?}");
    let narrowed = inst.data_table(&alice, TableRef::new("Leads", Some(&team.id)), "dataTable:read").await.unwrap();
    assert_eq!(narrowed.id, shared.id);
    assert_eq!(inst.data_table(&bob, TableRef::new("Leads", None), "dataTable:read").await.unwrap().id, shared.id);

    // A viewer reads rows but may not write them; the refusal names the permission.
    let r = TableRef::new(&shared.id, None);
    inst.insert_data_table_rows(&alice, r, &[row(json!({"email": "a@acme.io"}))]).await.unwrap();
    let (_, page) = inst.query_data_table_rows(&bob, r, &RowQuery::default()).await.unwrap();
    assert_eq!(page.count, 1);
    let e = inst.insert_data_table_rows(&bob, r, &[row(json!({"email": "b@acme.io"}))]).await.unwrap_err();
    assert!(matches!(&e, InstanceError::Forbidden(m) if m.contains("dataTable:writeRow")), "{e:?}");
    assert!(matches!(inst.create_data_table(&bob, Some(&team.id), "Mine", &cols(&[("a", ColumnType::String)])).await, Err(InstanceError::Forbidden(_))));

    // Listing is per project; search spans the readable ones.
    assert_eq!(inst.list_data_tables(&alice, None).await.unwrap().data.iter().map(|t| t.id.clone()).collect::<Vec<_>>(), [leads.id.clone()]);
    assert_eq!(inst.list_data_tables(&bob, Some(&team.id)).await.unwrap().count, 1);
    assert!(matches!(inst.list_data_tables(&bob, Some(&home)).await, Err(InstanceError::NotFound(_))));
    assert_eq!(inst.search_data_tables(&alice, Some("LEADS"), None, 100).await.unwrap().count, 2);
    assert_eq!(inst.search_data_tables(&alice, None, Some(&team.id), 100).await.unwrap().count, 1);
}

#[tokio::test]
async fn columns_rows_and_names_change_through_the_operations() {
    let (_env, inst) = setup().await;
    let alice = someone(&inst, "alice").await;
    let t = inst
        .create_data_table(&alice, None, "Contacts", &cols(&[("name", ColumnType::String), ("score", ColumnType::Number)]))
        .await
        .unwrap();
    let r = TableRef::new(&t.id, None);
    let conflict = inst.create_data_table(&alice, None, "Contacts", &cols(&[("a", ColumnType::String)])).await.unwrap_err();
    assert!(matches!(conflict, InstanceError::Conflict(_)), "{conflict:?}");

    let (_, email) = inst.add_data_table_column(&alice, r, &NewColumn { name: "email".into(), kind: ColumnType::String }).await.unwrap();
    let rows: Vec<Map<String, Value>> = ["Ann", "bob", "Cy"]
        .iter()
        .enumerate()
        .map(|(i, n)| row(json!({"name": n, "score": i * 10, "email": format!("{}@ACME.io", n.to_lowercase())})))
        .collect();
    let (_, inserted) = inst.insert_data_table_rows(&alice, r, &rows).await.unwrap();
    assert_eq!(inserted.len(), 3);
    let bad = inst.insert_data_table_rows(&alice, r, &[row(json!({"name": "ok"})), row(json!({"nope": 1}))]).await.unwrap_err();
    assert!(matches!(&bad, InstanceError::Invalid(m) if m.contains("nope")), "{bad:?}");

    let q = |f: Filter| RowQuery { filter: Some(f), ..RowQuery::default() };
    let (_, page) = inst.query_data_table_rows(&alice, r, &q(filter("email", Op::Ilike, json!("acme")))).await.unwrap();
    assert_eq!(page.count, 3, "ilike without % is contains, ignoring case");
    let (_, page) = inst.query_data_table_rows(&alice, r, &q(filter("email", Op::Like, json!("acme")))).await.unwrap();
    assert_eq!(page.count, 0, "like matches case");

    let (_, updated) =
        inst.update_data_table_rows(&alice, r, &filter("score", Op::Gte, json!(10)), &row(json!({"name": "vip"}))).await.unwrap();
    assert_eq!(updated.len(), 2);
    let (_, renamed) = inst.rename_data_table_column(&alice, r, &email.id, "mail").await.unwrap();
    assert_eq!(renamed.name, "mail");
    let (_, page) = inst.query_data_table_rows(&alice, r, &q(filter("mail", Op::IsNotEmpty, Value::Null))).await.unwrap();
    assert_eq!(page.count, 3, "values follow the renamed column");

    assert!(inst.delete_data_table_rows(&alice, r, &Filter::default()).await.is_err(), "a delete needs a filter");
    let (_, deleted) = inst.delete_data_table_rows(&alice, r, &filter("name", Op::Eq, json!("vip"))).await.unwrap();
    assert_eq!(deleted.len(), 2);
    let (_, gone) = inst.delete_data_table_column(&alice, r, &email.id).await.unwrap();
    assert_eq!(gone.name, "mail");
    let (before, after) = inst.rename_data_table(&alice, r, "People").await.unwrap();
    assert_eq!((before.name.as_str(), after.name.as_str()), ("Contacts", "People"));
    assert_eq!(inst.data_table(&alice, TableRef::new("People", None), "dataTable:read").await.unwrap().id, t.id);
    let dropped = inst.delete_data_table(&alice, TableRef::new("People", None)).await.unwrap();
    assert_eq!(dropped.id, t.id);
    assert!(inst.data.data_tables.get(&t.id).await.unwrap().is_none());
}
