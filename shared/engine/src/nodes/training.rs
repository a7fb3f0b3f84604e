//! n8n's training nodes with their fixed sample data: Customer Datastore
//! (`n8nTrainingCustomerDatastore`) and Customer Messenger
//! (`n8nTrainingCustomerMessenger`), both v1.

use serde_json::{json, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::Result;

fn people() -> Vec<Value> {
    vec![
        json!({"id": "23423532", "name": "Jay Gatsby", "email": "gatsby@west-egg.com", "notes": "Keeps asking about a green light??", "country": "US", "created": "1925-04-10"}),
        json!({"id": "23423533", "name": "José Arcadio Buendía", "email": "jab@macondo.co", "notes": "Lots of people named after him. Very confusing", "country": "CO", "created": "1967-05-05"}),
        json!({"id": "23423534", "name": "Max Sendak", "email": "info@in-and-out-of-weeks.org", "notes": "Keeps rolling his terrible eyes", "country": "US", "created": "1963-04-09"}),
        json!({"id": "23423535", "name": "Zaphod Beeblebrox", "email": "captain@heartofgold.com", "notes": "Felt like I was talking to more than one person", "country": null, "created": "1979-10-12"}),
        json!({"id": "23423536", "name": "Edmund Pevensie", "email": "edmund@narnia.gov", "notes": "Passionate sailor", "country": "UK", "created": "1950-10-16"}),
    ]
}

pub fn customer_datastore(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let n = ctx.input(0).len();
    let op = ctx.param_str("operation", 0, "getOnePerson")?;
    let mut out: Vec<Item> = Vec::new();
    for i in 0..n {
        if op == "getAllPeople" {
            let all = people();
            let rows = if ctx.param_bool("returnAll", i, false)? {
                all
            } else {
                let limit = ctx.param_f64("limit", i, 5.0)?.max(0.0) as usize;
                all.into_iter().take(limit).collect()
            };
            out.extend(rows.into_iter().map(|r| item_from(r, i)));
        } else if op == "getOnePerson" {
            out.push(item_from(people().swap_remove(0), i));
        }
    }
    Ok(NodeOutput::one(out))
}

pub fn customer_messenger(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let n = ctx.input(0).len();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let customer = super::js_string(&ctx.param("customerId", i, json!(""))?);
        let message = super::js_string(&ctx.param("message", i, json!(""))?);
        out.push(item_from(json!({ "output": format!("Sent message to customer {customer}:  {message}") }), i));
    }
    Ok(NodeOutput::one(out))
}
