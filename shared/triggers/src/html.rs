//! The form pages: plain HTML that works without JavaScript (a `<form>`
//! posting `multipart/form-data` back to its own URL), escaped throughout
//! and served under a CSP that runs no script at all.

use engine::form::{Completion, FieldType, FormDefinition, FormField};
use serde_json::{Map, Value};

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;background:#f5f5f7;margin:0;padding:2rem 1rem;color:#222}\
main{max-width:36rem;margin:0 auto;background:#fff;border-radius:8px;padding:2rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}\
h1{font-size:1.5rem;margin-top:0}label,legend{display:block;font-weight:600;margin:1.2rem 0 .4rem}\
input[type=text],input[type=email],input[type=number],input[type=password],input[type=date],textarea,select{width:100%;box-sizing:border-box;padding:.5rem;border:1px solid #bbb;border-radius:4px;font:inherit}\
fieldset{border:0;padding:0;margin:0}.choice{font-weight:400;display:block;margin:.2rem 0}\
button{margin-top:1.5rem;padding:.6rem 1.4rem;border:0;border-radius:4px;background:#ff6d5a;color:#fff;font:inherit;cursor:pointer}\
.error{background:#fdecea;color:#8a1c12;padding:.7rem;border-radius:4px}.req{color:#c00}.note{color:#777;font-size:.85rem;margin-top:2rem}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>",
        escape(title)
    )
}

fn previous<'a>(values: Option<&'a Map<String, Value>>, key: &str) -> Vec<&'a str> {
    match values.and_then(|v| v.get(key)) {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    }
}

fn field(f: &FormField, values: Option<&Map<String, Value>>) -> String {
    let key = escape(&f.key);
    let label = format!(
        "{}{}",
        escape(&f.label),
        if f.required { " <span class=\"req\">*</span>" } else { "" }
    );
    let req = if f.required { " required" } else { "" };
    let placeholder = f.placeholder.as_deref().map(|p| format!(" placeholder=\"{}\"", escape(p))).unwrap_or_default();
    let prev = previous(values, &f.key);
    let value = prev.first().map(|v| format!(" value=\"{}\"", escape(v))).unwrap_or_default();
    let input = |ty: &str| {
        format!("<label for=\"{key}\">{label}</label><input type=\"{ty}\" id=\"{key}\" name=\"{key}\"{req}{placeholder}{value}>")
    };
    match f.field_type {
        FieldType::Text => input("text"),
        FieldType::Email => input("email"),
        FieldType::Number => format!("<label for=\"{key}\">{label}</label><input type=\"number\" step=\"any\" id=\"{key}\" name=\"{key}\"{req}{placeholder}{value}>"),
        FieldType::Password => format!("<label for=\"{key}\">{label}</label><input type=\"password\" id=\"{key}\" name=\"{key}\"{req}{placeholder}>"),
        FieldType::Date => input("date"),
        FieldType::Textarea => format!(
            "<label for=\"{key}\">{label}</label><textarea id=\"{key}\" name=\"{key}\" rows=\"4\"{req}{placeholder}>{}</textarea>",
            prev.first().map(|v| escape(v)).unwrap_or_default()
        ),
        FieldType::Dropdown => {
            let multiple = if f.multiselect { " multiple" } else { "" };
            let mut opts = if f.multiselect { String::new() } else { "<option value=\"\"></option>".to_owned() };
            for o in &f.options {
                let sel = if prev.contains(&o.as_str()) { " selected" } else { "" };
                opts.push_str(&format!("<option value=\"{0}\"{sel}>{0}</option>", escape(o)));
            }
            format!("<label for=\"{key}\">{label}</label><select id=\"{key}\" name=\"{key}\"{multiple}{req}>{opts}</select>")
        }
        FieldType::Checkbox | FieldType::Radio => {
            let ty = if f.field_type == FieldType::Radio { "radio" } else { "checkbox" };
            // A required checkbox group cannot be enforced without script: the server checks it.
            let each_req = if f.field_type == FieldType::Radio { req } else { "" };
            let mut out = format!("<fieldset><legend>{label}</legend>");
            for o in &f.options {
                let checked = if prev.contains(&o.as_str()) { " checked" } else { "" };
                out.push_str(&format!(
                    "<label class=\"choice\"><input type=\"{ty}\" name=\"{key}\" value=\"{0}\"{each_req}{checked}> {0}</label>",
                    escape(o)
                ));
            }
            out.push_str("</fieldset>");
            out
        }
        FieldType::File => {
            let multiple = if f.multiple_files { " multiple" } else { "" };
            let accept = f.accept_file_types.as_deref().map(|a| format!(" accept=\"{}\"", escape(a))).unwrap_or_default();
            format!("<label for=\"{key}\">{label}</label><input type=\"file\" id=\"{key}\" name=\"{key}\"{multiple}{accept}{req}>")
        }
        // The owner's markup; the page's CSP runs no script from it.
        FieldType::Html => f.value.clone().unwrap_or_default(),
        FieldType::HiddenField => format!(
            "<input type=\"hidden\" name=\"{key}\" value=\"{}\">",
            escape(prev.first().copied().or(f.value.as_deref()).unwrap_or_default())
        ),
    }
}

/// The form, with an error and the values to show again after a refused submission.
pub fn form_page(def: &FormDefinition, error: Option<&str>, values: Option<&Map<String, Value>>) -> String {
    let mut body = format!("<h1>{}</h1>", escape(&def.title));
    if !def.description.is_empty() {
        body.push_str(&format!("<p>{}</p>", escape(&def.description).replace('\n', "<br>")));
    }
    if let Some(e) = error {
        body.push_str(&format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)));
    }
    body.push_str("<form method=\"post\" enctype=\"multipart/form-data\">");
    for f in &def.fields {
        body.push_str(&field(f, values));
    }
    body.push_str(&format!("<button type=\"submit\">{}</button></form>", escape(&def.button_label)));
    if def.append_attribution {
        body.push_str("<p class=\"note\">Form automated with Instance AI</p>");
    }
    page(&def.title, &body)
}

/// The screen after a submission.
pub fn completion_page(def: &FormDefinition) -> String {
    let (title, text) = match &def.completion {
        Completion::Text { title, text } => (title.clone(), text.clone()),
        Completion::Redirect { .. } => ("Form Submitted".to_owned(), "Your response has been recorded".to_owned()),
    };
    page(&def.title, &format!("<h1>{}</h1><p>{}</p>", escape(&title), escape(&text).replace('\n', "<br>")))
}

pub fn message_page(title: &str, text: &str) -> String {
    page(title, &format!("<h1>{}</h1><p>{}</p>", escape(title), escape(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_the_owner_or_submitter_wrote_is_escaped() {
        assert_eq!(escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }
}
