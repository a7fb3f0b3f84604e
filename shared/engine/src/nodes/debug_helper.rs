//! Debug Helper as n8n's node runs it: `doNothing` (no output items),
//! `throwError` (NodeApiError / NodeOperationError / Error with the given
//! message, default "Node has thrown an error"), `randomData` (the data sets
//! of n8n's `randomData.ts` in the same shapes, `randomDataCount` per input
//! item, one item each or one `{generatedItems}` item, a `randomDataSeed`
//! making the output repeatable). `oom` is refused: it exists to exhaust the
//! process's memory. Parameters are read from the first item, as n8n does.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{Item, PairedItem};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let category = ctx.param_str("category", 0, "throwError")?;
    let n = ctx.input(0).len();
    let mut out = vec![];
    for i in 0..n {
        let item = match category.as_str() {
            "doNothing" => Ok(vec![]),
            "throwError" => Err(thrown(ctx)?),
            "oom" => Err(EngineError::node("The Debug Helper's \"Out Of Memory\" category is not supported: it would exhaust the memory every execution shares")),
            "randomData" => random_data(ctx, i),
            other => Err(EngineError::node(format!("The value \"{other}\" is not supported for \"Category\""))),
        };
        match item {
            Ok(items) => out.extend(items),
            Err(e) if ctx.continue_on_fail() => out.push(Item { paired_item: Some(PairedItem::new(i, 0)), ..Item::new(json!({ "error": e.to_string() })) }),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

/// The error the node is configured to throw (n8n reads it from item 0).
fn thrown(ctx: &mut NodeContext<'_>) -> Result<EngineError> {
    let kind = ctx.param_str("throwErrorType", 0, "NodeApiError")?;
    let message = ctx.param_str("throwErrorMessage", 0, "Node has thrown an error")?;
    Ok(match kind.as_str() {
        // NodeApiError and NodeOperationError both carry the message as is;
        // a plain Error too — the difference in n8n is only the class name
        "NodeApiError" | "NodeOperationError" | "Error" => EngineError::node(message),
        other => EngineError::node(format!("The value \"{other}\" is not supported for \"Error Type\"")),
    })
}

fn random_data(ctx: &mut NodeContext<'_>, i: usize) -> Result<Vec<Item>> {
    let kind = ctx.param_str("randomDataType", 0, "user")?;
    let count = ctx.param_f64("randomDataCount", 0, 10.0)?.max(0.0).min(100_000.0) as usize;
    let seed = ctx.param_str("randomDataSeed", 0, "")?;
    let single = ctx.param_bool("randomDataSingleArray", 0, false)?;
    let alphabet = ctx.param_str("nanoidAlphabet", 0, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")?;
    let nano_len = ctx.param_str("nanoidLength", 0, "16")?.trim().parse::<usize>().unwrap_or(16).min(4096);
    let mut rng = if seed.is_empty() { StdRng::from_os_rng() } else { StdRng::seed_from_u64(seed_of(&seed)) };
    let mut gen = Gen { rng: &mut rng };
    let values: Vec<Value> = (0..count)
        .map(|_| match kind.as_str() {
            "user" => Ok(gen.user()),
            "email" => Ok(json!({ "email": gen.email(), "confirmed": gen.rng.random_bool(0.5) })),
            "address" => Ok(gen.address()),
            "creditCard" => Ok(gen.credit_card()),
            "uuid" => Ok(json!(gen.uuid())),
            "macAddress" => Ok(json!(gen.mac())),
            "ipv4" => Ok(json!(gen.ipv4())),
            "ipv6" => Ok(json!(gen.ipv6())),
            "latLong" => Ok(gen.lat_long()),
            "semver" => Ok(json!(format!("{}.{}.{}", gen.rng.random_range(0..10), gen.rng.random_range(0..20), gen.rng.random_range(0..50)))),
            "url" => Ok(json!(format!("https://{}.{}", gen.pick(WORDS), gen.pick(TLDS)))),
            "nanoid" => Ok(json!(gen.nanoid(&alphabet, nano_len))),
            other => Err(EngineError::node(format!("The value \"{other}\" is not supported for \"Data Type\""))),
        })
        .collect::<Result<_>>()?;
    let paired = || Some(PairedItem::new(i, 0));
    Ok(if single {
        vec![Item { paired_item: paired(), ..Item::new(json!({ "generatedItems": values })) }]
    } else {
        // n8n puts each generated value in `json` as it is, strings included
        values.into_iter().map(|v| Item { paired_item: paired(), ..Item::new(v) }).collect()
    })
}

/// A seed string as a number (FNV-1a), so one seed gives one data set.
fn seed_of(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

const FIRST: &[&str] = &["James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth", "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen"];
const LAST: &[&str] = &["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin"];
const STREETS: &[&str] = &["Main Street", "Oak Avenue", "Pine Road", "Maple Drive", "Cedar Lane", "Elm Street", "Washington Avenue", "Lake Road", "Hill Street", "Park Avenue"];
const CITIES: &[&str] = &["Springfield", "Riverside", "Franklin", "Greenville", "Bristol", "Clinton", "Fairview", "Salem", "Madison", "Georgetown"];
const STATES: &[&str] = &["Alabama", "California", "Colorado", "Florida", "Georgia", "Illinois", "New York", "Ohio", "Texas", "Washington"];
const COUNTRIES: &[&str] = &["United States", "Canada", "Germany", "France", "Brazil", "Japan", "Australia", "India", "Spain", "Mexico"];
const WORDS: &[&str] = &["example", "acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wayne", "wonka"];
const TLDS: &[&str] = &["com", "net", "org", "io", "dev"];

struct Gen<'r> {
    rng: &'r mut StdRng,
}

impl Gen<'_> {
    fn pick(&mut self, list: &[&'static str]) -> &'static str {
        list[self.rng.random_range(0..list.len())]
    }
    fn uuid(&mut self) -> String {
        let b: [u8; 16] = self.rng.random();
        uuid::Builder::from_random_bytes(b).into_uuid().to_string()
    }
    fn email(&mut self) -> String {
        format!("{}.{}@{}.{}", self.pick(FIRST).to_lowercase(), self.pick(LAST).to_lowercase(), self.pick(WORDS), self.pick(TLDS))
    }
    fn password(&mut self) -> String {
        self.nanoid("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 12)
    }
    fn nanoid(&mut self, alphabet: &str, len: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        if chars.is_empty() {
            return String::new();
        }
        (0..len).map(|_| chars[self.rng.random_range(0..chars.len())]).collect()
    }
    fn user(&mut self) -> Value {
        json!({ "uid": self.uuid(), "email": self.email(), "firstname": self.pick(FIRST), "lastname": self.pick(LAST), "password": self.password() })
    }
    fn address(&mut self) -> Value {
        json!({
            "firstname": self.pick(FIRST),
            "lastname": self.pick(LAST),
            "street": format!("{} {}", self.rng.random_range(1..9999), self.pick(STREETS)),
            "city": self.pick(CITIES),
            "zip": format!("{:05}", self.rng.random_range(0..100_000)),
            "state": self.pick(STATES),
            "country": self.pick(COUNTRIES),
        })
    }
    fn credit_card(&mut self) -> Value {
        let number: String = (0..16).map(|_| char::from(b'0' + self.rng.random_range(0..10u8))).collect();
        json!({
            "type": if self.rng.random_bool(0.5) { "MasterCard" } else { "Visa" },
            "number": number,
            "ccv": format!("{:03}", self.rng.random_range(0..1000)),
            "exp": format!("{:02}/{:02}", self.rng.random_range(1..=12), self.rng.random_range(1..=40)),
            "holder_name": format!("{} {}", self.pick(FIRST), self.pick(LAST)),
        })
    }
    fn mac(&mut self) -> String {
        let b: [u8; 6] = self.rng.random();
        b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
    }
    fn ipv4(&mut self) -> String {
        let b: [u8; 4] = self.rng.random();
        format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    }
    fn ipv6(&mut self) -> String {
        (0..8).map(|_| format!("{:x}", self.rng.random::<u16>())).collect::<Vec<_>>().join(":")
    }
    fn lat_long(&mut self) -> Value {
        json!({ "latitude": self.rng.random_range(-90.0..90.0f64), "longitude": self.rng.random_range(-180.0..180.0f64) })
    }
}
