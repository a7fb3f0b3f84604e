use expression::{CodeMode, Evaluator, Limits, StaticData};
use serde_json::json;
use std::time::Instant;
#[test]
fn probe() {
    let mut ev = Evaluator::new(Limits::default()).unwrap();
    let code = r#"
const t0 = Date.now();
const N = 100000;
const out = new Array(N);
for (let i = 0; i < N; i++) {
  out[i] = { json: { id: i, name: 'user' + i, score: i % 100, tags: ['a', 'b'] } };
}
const t1 = Date.now();
const n = __n8n_code.normalizeAll(out);
const t2 = Date.now();
const s = JSON.stringify(n);
const t3 = Date.now();
console.log('gen', t1-t0, 'norm', t2-t1, 'stringify', t3-t2, s.length);
return [];
"#;
    let t = Instant::now();
    let out = ev.run_code(code, CodeMode::AllItems, &StaticData::from_json(json!({}))).unwrap();
    println!("{:?} total {:?}", out.console, t.elapsed());
    let gen = "const N = 100000;\nconst out = new Array(N);\nfor (let i = 0; i < N; i++) {\n  out[i] = { json: { id: i, name: 'user' + i, score: i % 100, tags: ['a', 'b'] } };\n}\nreturn out;";
    let t = Instant::now();
    let out = ev.run_code(gen, CodeMode::AllItems, &StaticData::from_json(json!({}))).unwrap();
    println!("full {:?} {}", t.elapsed(), out.value.as_array().unwrap().len());
    let t = Instant::now();
    let s = serde_json::to_string(&out.value).unwrap();
    println!("serde to_string {:?}", t.elapsed());
    let t = Instant::now();
    let _v: serde_json::Value = serde_json::from_str(&s).unwrap();
    println!("serde parse {:?}", t.elapsed());
}
