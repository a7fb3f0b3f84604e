//! Google Drive (API v3, https://developers.google.com/drive/api/reference/rest/v3):
//! what its description cannot say as routing — an upload (metadata and
//! content as one `multipart/related` request, then the parent and
//! properties set), a download (Google's own formats exported), a search
//! built from the filters with page-token paging, deleting or trashing.

use serde_json::{json, Map, Value};

use super::{api_error, at, item, list, locator, per_item, text};
use crate::data::Item;
use crate::declarative::{Call, Run, ServiceRequest};
use crate::error::{EngineError, Result};
use crate::nodes::js_string;
use reqwest::Method;

const FOLDER: &str = "application/vnd.google-apps.folder";
/// The default folder and drive of the locators.
const ROOT: &str = "root";
const MY_DRIVE: &str = "My Drive";

pub(crate) fn code(op: &str) -> Option<Run> {
    Some(match op {
        "upload" => upload,
        "download" => download,
        "deleteFile" => delete_file,
        "search" => search,
        _ => return None,
    })
}

fn start(call: &mut Call<'_, '_>) {
    call.api_error = api_error;
}

/// The folder a file goes in: the folder, else the shared drive's root, else My Drive's.
fn parent(folder: &str, drive: &str) -> String {
    if !folder.is_empty() && folder != ROOT {
        folder.to_owned()
    } else if !drive.is_empty() && drive != MY_DRIVE {
        drive.to_owned()
    } else {
        ROOT.to_owned()
    }
}

/// A folder or drive locator's id (a link's folder id extracted).
fn folder_of((mode, value): (String, String)) -> String {
    if mode != "url" {
        return value;
    }
    let re = regex::Regex::new(r"/folders/([0-9a-zA-Z\-_]+)").expect("a valid pattern");
    re.captures(&value).and_then(|c| c.get(1)).map(|m| m.as_str().to_owned()).unwrap_or(value)
}

/// `key`/`value` pairs of a fixed collection as an object.
fn pairs(v: Option<&Value>, list: &str) -> Option<Value> {
    let entries = v?.get(list)?.as_array()?;
    let mut o = Map::new();
    for e in entries {
        o.insert(e.get("key").map(js_string).unwrap_or_default(), e.get("value").cloned().unwrap_or(Value::Null));
    }
    Some(Value::Object(o))
}

/// Upload: the item's binary and its metadata in one `multipart/related`
/// request, then the parent folder and the options set (`files.update`).
fn upload(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call);
    per_item(call, |call, i| {
        let p = call.params(i)?;
        let field = text(&p, "inputDataFieldName");
        let items = call.items();
        let binary = items[i].binary.as_ref().and_then(|b| b.get(&field)).ok_or_else(|| EngineError::node(format!("The item has no binary field '{field}' [item {i}]")))?;
        let bytes = crate::binary::bytes_of(binary).map_err(EngineError::node)?;
        let mime = binary.get("mimeType").and_then(Value::as_str).unwrap_or("application/octet-stream").to_owned();
        let original = binary.get("fileName").and_then(Value::as_str).unwrap_or_default().to_owned();
        let name = Some(text(&p, "name")).filter(|n| !n.is_empty()).unwrap_or_else(|| original.clone());
        let (_, drive) = locator(&p, "driveId");
        let (_, folder) = locator(&p, "folderId");
        let parent = parent(&folder, &drive);
        let metadata = json!({"name": name, "parents": [parent]});
        let boundary = format!("drive-upload-{}", uuid::Uuid::new_v4().simple());
        let mut body = format!("--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n--{boundary}\r\nContent-Type: {mime}\r\n\r\n").into_bytes();
        body.extend_from_slice(&bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let uploaded = call.json(
            ServiceRequest::new(Method::POST, "/upload/drive/v3/files")
                .query("uploadType", "multipart")
                .query("supportsAllDrives", true)
                .raw(body, format!("multipart/related; boundary={boundary}")),
        )?;
        let id = uploaded.get("id").map(js_string).ok_or_else(|| EngineError::node("Drive answered the upload without a file id"))?;
        let options = p.get("options").cloned().unwrap_or(json!({}));
        let mut r = ServiceRequest::new(Method::PATCH, format!("/drive/v3/files/{id}"))
            .query("addParents", parent)
            .query("includeItemsFromAllDrives", true)
            .query("supportsAllDrives", true)
            .query("spaces", "appDataFolder, drive")
            .query("corpora", "allDrives");
        for k in ["keepRevisionForever", "ocrLanguage", "useContentAsIndexableText"] {
            if let Some(v) = options.get(k).filter(|v| !v.is_null() && v.as_str() != Some("")) {
                r.qs.insert(k.into(), v.clone());
            }
        }
        if !options.get("simplifyOutput").and_then(Value::as_bool).unwrap_or(false) {
            r.qs.insert("fields".into(), json!("*"));
        }
        let mut meta = json!({"mimeType": mime, "name": name, "originalFilename": original});
        if let Some(props) = pairs(options.get("propertiesUi"), "propertyValues") {
            meta["properties"] = props;
        }
        if let Some(props) = pairs(options.get("appPropertiesUi"), "appPropertyValues") {
            meta["appProperties"] = props;
        }
        Ok(vec![item(call.json(r.json(meta))?)])
    })
}

/// Download: the file's content (a Google Docs, Sheets, Slides or Drawings
/// file exported in the chosen format) as the item's binary.
fn download(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call);
    per_item(call, |call, i| {
        let p = call.params(i)?;
        let (_, id) = locator(&p, "fileId");
        let file = call.json(
            ServiceRequest::new(Method::GET, format!("/drive/v3/files/{id}")).query("fields", "mimeType,name").query("supportsTeamDrives", true).query("supportsAllDrives", true),
        )?;
        let file_mime = file.get("mimeType").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut r = if file_mime.contains("vnd.google-apps") {
            let conversion = |k: &str, default: &str| at(&p, &format!("options.googleFileConversion.conversion.{k}")).map(js_string).unwrap_or_else(|| default.to_owned());
            let format = match file_mime.split('.').nth(2).unwrap_or_default() {
                "document" => conversion("docsToFormat", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
                "presentation" => conversion("slidesToFormat", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
                "spreadsheet" => conversion("sheetsToFormat", "application/x-vnd.oasis.opendocument.spreadsheet"),
                _ => conversion("drawingsToFormat", "image/jpeg"),
            };
            ServiceRequest::new(Method::GET, format!("/drive/v3/files/{id}/export")).query("mimeType", format).query("supportsAllDrives", true)
        } else {
            ServiceRequest::new(Method::GET, format!("/drive/v3/files/{id}")).query("alt", "media").query("supportsAllDrives", true)
        };
        r.headers.push(("accept".into(), "*/*".into()));
        let resp = call.send(r)?;
        let content_type = resp.content_type();
        let mime = content_type.split(';').next().map(str::trim).filter(|m| !m.is_empty()).map(str::to_owned).unwrap_or(file_mime);
        let name = at(&p, "options.fileName").map(js_string).filter(|n| !n.is_empty()).or_else(|| file.get("name").map(js_string));
        let property = at(&p, "options.binaryPropertyName").map(js_string).filter(|n| !n.is_empty()).unwrap_or_else(|| "data".into());
        let input = &call.items()[i];
        let mut binary = input.binary.as_ref().and_then(|b| b.as_object().cloned()).unwrap_or_default();
        binary.insert(property, crate::binary::entry(&resp.body, name.as_deref(), Some(&mime)));
        Ok(vec![Item { json: input.json.clone(), binary: Some(Value::Object(binary).into()), paired_item: None }])
    })
}

/// Delete: to the bin, or for good with Delete Permanently.
fn delete_file(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call);
    per_item(call, |call, i| {
        let p = call.params(i)?;
        let (_, id) = locator(&p, "fileId");
        let r = if at(&p, "options.deletePermanently").and_then(Value::as_bool).unwrap_or(false) {
            ServiceRequest::new(Method::DELETE, format!("/drive/v3/files/{id}"))
        } else {
            ServiceRequest::new(Method::PATCH, format!("/drive/v3/files/{id}")).json(json!({"trashed": true}))
        };
        call.send(r.query("supportsAllDrives", true))?;
        Ok(vec![item(json!({"id": id, "success": true}))])
    })
}

/// Search: the name or query with the filters as Drive's `q`, paged by
/// `nextPageToken` with Return All.
fn search(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call);
    per_item(call, |call, i| {
        let p = call.params(i)?;
        let query_string = text(&p, "queryString");
        let mut q = vec![if text(&p, "searchMethod") == "query" { query_string } else { format!("name contains '{}'", query_string.replace('\\', "\\\\").replace('\'', "\\'")) }];
        let filter = p.get("filter").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut drive = String::new();
        let mut folder = String::new();
        let mut types = vec![];
        if !filter.is_empty() {
            folder = folder_of(locator(&filter, "folderId"));
            if !folder.is_empty() && folder != ROOT {
                q.push(format!("'{folder}' in parents"));
            }
            drive = folder_of(locator(&filter, "driveId"));
            match filter.get("whatToSearch").and_then(Value::as_str).unwrap_or("all") {
                "folders" => q.push(format!("mimeType = '{FOLDER}'")),
                what => {
                    if what == "files" {
                        q.push(format!("mimeType != '{FOLDER}'"));
                    }
                    let wanted: Vec<String> = filter.get("fileTypes").and_then(Value::as_array).into_iter().flatten().map(js_string).collect();
                    if !wanted.is_empty() && !wanted.iter().any(|t| t == "*") {
                        types = wanted.iter().map(|t| format!("mimeType = '{t}'")).collect();
                    }
                }
            }
            if !filter.get("includeTrashed").and_then(Value::as_bool).unwrap_or(false) {
                q.push("trashed = false".into());
            }
        }
        if !types.is_empty() {
            q.push(format!("({})", types.join(" or ")));
        }
        let fields: Vec<String> = at(&p, "options.fields").and_then(Value::as_array).into_iter().flatten().map(js_string).collect();
        let fields = if fields.iter().any(|f| f == "*") { "*".to_owned() } else if fields.is_empty() { "id, name".to_owned() } else { fields.join(", ") };
        let mut qs = Map::new();
        qs.insert("fields".into(), json!(format!("nextPageToken, files({fields})")));
        qs.insert("q".into(), json!(q.into_iter().filter(|c| !c.is_empty()).collect::<Vec<_>>().join(" and ")));
        qs.insert("includeItemsFromAllDrives".into(), json!(true));
        qs.insert("supportsAllDrives".into(), json!(true));
        qs.insert("spaces".into(), json!("appDataFolder, drive"));
        qs.insert("corpora".into(), json!("allDrives"));
        if drive == MY_DRIVE || (drive.is_empty() && folder == ROOT) {
            qs.insert("includeItemsFromAllDrives".into(), json!(false));
            qs.insert("supportsAllDrives".into(), json!(false));
            qs.insert("spaces".into(), json!(if drive == MY_DRIVE { "appDataFolder, drive" } else { "drive" }));
            qs.insert("corpora".into(), json!("user"));
        } else if !drive.is_empty() {
            qs.insert("driveId".into(), json!(drive));
            qs.insert("corpora".into(), json!("drive"));
        }
        let all = p.get("returnAll").and_then(Value::as_bool).unwrap_or(false);
        let files = list(call, "/drive/v3/files", &qs, "pageSize", "files", all, p.get("limit").cloned().unwrap_or(json!(50)))?;
        Ok(files.into_iter().map(item).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_default_to_the_drive_then_my_drive() {
        assert_eq!(parent("f1", "d1"), "f1");
        assert_eq!(parent(ROOT, "d1"), "d1");
        assert_eq!(parent(ROOT, MY_DRIVE), ROOT);
        assert_eq!(parent("", ""), ROOT);
    }
}
