//! Arbitrary input must produce values or errors, never panics.

use std::time::Duration;

use expression::{Evaluator, Limits, StaticData};
use proptest::prelude::*;
use serde_json::json;

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_templates_never_panic(
        s in "(=)?([a-z$. \\[\\]\"'`(){}+*/%<>=!?&|:;,0-9\\\\-]|é|中|\u{1F600}|\\{\\{|\\}\\}|\\$json|length\\(\\)){0,40}"
    ) {
        thread_local! {
            static EV: std::cell::RefCell<Evaluator> = std::cell::RefCell::new(
                Evaluator::new(Limits { timeout: Duration::from_millis(200), memory_bytes: 16 << 20 }).unwrap());
        }
        let data = StaticData::from_json(json!({"a": {"b": [1, "x"]}, "n": 2, "s": "é中"}));
        let _ = Evaluator::has_fast_path(&s);
        let (fast, js) = EV.with(|ev| {
            let mut ev = ev.borrow_mut();
            (ev.evaluate(&s, &data), ev.evaluate_js(&s, &data))
        });
        // when both succeed they must agree
        if let (Ok(a), Ok(b)) = (&fast, &js) {
            prop_assert_eq!(a, b, "{}", s);
        }
    }
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("$json.n".to_string()),
        Just("$json.f".to_string()),
        Just("$json.s".to_string()),
        Just("$json.e".to_string()),
        Just("$json.z".to_string()),
        Just("$json.t".to_string()),
        Just("$json.nul".to_string()),
        Just("$json.missing".to_string()),
        Just("$json.obj".to_string()),
        Just("$json.arr".to_string()),
        Just("$json.arr[0]".to_string()),
        Just("$json['obj']?.x".to_string()),
        Just("$json.big".to_string()),
        Just("$json.ns".to_string()),
        Just("$itemIndex".to_string()),
        (-1000i32..1000).prop_map(|n| n.to_string()),
        (-100.0f64..100.0).prop_map(|f| format!("{f}")),
        Just("0.1".to_string()),
        Just("1e21".to_string()),
        Just("'10'".to_string()),
        Just("''".to_string()),
        Just("'abc'".to_string()),
        Just("\"Zé\"".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        Just("null".to_string()),
        Just("undefined".to_string()),
        Just("NaN".to_string()),
    ]
}

fn expr() -> impl Strategy<Value = String> {
    leaf().prop_recursive(4, 24, 2, |inner| {
        let ops = prop_oneof![
            Just("+"), Just("-"), Just("*"), Just("/"), Just("%"), Just("<"), Just(">"), Just("<="), Just(">="),
            Just("=="), Just("!="), Just("==="), Just("!=="), Just("&&"), Just("||"),
        ];
        prop_oneof![
            (inner.clone(), ops, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
            inner.clone().prop_map(|a| format!("!{a}")),
            inner.clone().prop_map(|a| format!("-({a})")),
            inner.clone().prop_map(|a| format!("typeof {a}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} ?? {b})")),
            (inner.clone(), inner.clone(), inner).prop_map(|(a, b, c)| format!("({a} ? {b} : {c})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, .. ProptestConfig::default() })]

    #[test]
    fn fast_path_matches_quickjs(e in expr(), mixed in any::<bool>()) {
        thread_local! {
            static EV: std::cell::RefCell<Evaluator> = std::cell::RefCell::new(Evaluator::new(Limits::default()).unwrap());
        }
        let data = StaticData::from_json(json!({
            "n": 7, "f": 2.5, "s": "12", "e": "", "z": 0, "t": true, "nul": null, "obj": {"x": 1}, "arr": [3, "x"],
            "big": 12345678901234567890u64, "ns": " 0x1f "
        }));
        let template = if mixed { format!("=v: {{{{ {e} }}}}!") } else { format!("={{{{ {e} }}}}") };
        EV.with(|ev| {
            let mut ev = ev.borrow_mut();
            let a = ev.evaluate(&template, &data);
            let b = ev.evaluate_js(&template, &data);
            match (&a, &b) {
                (Ok(x), Ok(y)) => prop_assert_eq!(x, y, "{}", template),
                (Err(_), Err(_)) => {}
                _ => prop_assert!(false, "{}: fast {:?} vs js {:?}", template, a, b),
            }
            Ok(())
        })?;
    }
}
