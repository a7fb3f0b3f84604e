//! POST /instance-ai/confirm/:requestId.

use crate::App;
use lambda_http::{Body, Request, Response};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    super::not_yet(app, &req, "POST /instance-ai/confirm/:requestId").await
}
