//! Who is acting, and what they may touch. Every operation takes a
//! [`Caller`]; reads resolve readability from the caller's own project
//! roles, writes go to the caller's bound project. A stranger's resource is
//! "not found", never "forbidden": nothing about it leaks.

use crate::{Instance, InstanceError};
use protocol::UserId;
use store::data::users_projects::{ProjectRole, User};
use store::data::workflows::WorkflowMeta;

/// The acting user, and the project writes go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user: UserId,
    /// The project a conversation is bound to (its first message fixed it);
    /// `None` → the user's personal project.
    pub project: Option<String>,
}

impl Caller {
    pub fn new(user: UserId) -> Self {
        Caller { user, project: None }
    }

    pub fn in_project(user: UserId, project: impl Into<String>) -> Self {
        Caller { user, project: Some(project.into()) }
    }
}

impl Instance {
    /// The caller's user record; an API key's owner who has never used the
    /// instance gets one (with a personal project) on first use.
    pub async fn user(&self, caller: &Caller) -> Result<User, InstanceError> {
        let projects = &self.data.projects;
        if let Some(u) = projects.user(&caller.user).await? {
            return Ok(u);
        }
        let email = format!("{}@users.instance-ai.local", caller.user);
        match projects.create_user(&caller.user, &email, None, None).await {
            Ok((u, _)) => Ok(u),
            // Two first calls raced: the other one created it.
            Err(store::StoreError::Conflict(_)) => projects
                .user(&caller.user)
                .await?
                .ok_or_else(|| InstanceError::Internal("user vanished after create".into())),
            Err(e) => Err(e.into()),
        }
    }

    /// The project writes go to: the bound one (checked for `scope`), else
    /// the personal project.
    pub async fn write_project(&self, caller: &Caller, scope: &str) -> Result<String, InstanceError> {
        let user = self.user(caller).await?;
        match &caller.project {
            Some(p) => {
                self.require_project(caller, p, scope).await?;
                Ok(p.clone())
            }
            None => Ok(user.personal_project_id),
        }
    }

    /// The project an operation that may name one acts in: the named one
    /// (checked for `scope`), else the caller's write project.
    pub async fn target_project(&self, caller: &Caller, project_id: Option<&str>, scope: &str) -> Result<String, InstanceError> {
        match project_id {
            Some(p) => {
                self.require_project(caller, p, scope).await?;
                Ok(p.to_owned())
            }
            None => self.write_project(caller, scope).await,
        }
    }

    /// Requires `scope` in `project_id`.
    pub async fn require_project(&self, caller: &Caller, project_id: &str, scope: &str) -> Result<ProjectRole, InstanceError> {
        self.user(caller).await?;
        match self.data.projects.role(&caller.user, project_id).await? {
            None => Err(InstanceError::NotFound(format!("project {project_id}"))),
            Some(role) if role.can(scope) => Ok(role),
            Some(_) => Err(InstanceError::Forbidden(format!("you lack the permission {scope} in project {project_id}"))),
        }
    }

    /// A workflow the caller may act on with `scope`.
    pub async fn workflow_access(
        &self,
        caller: &Caller,
        id: &str,
        scope: &str,
    ) -> Result<(WorkflowMeta, ProjectRole), InstanceError> {
        self.user(caller).await?;
        let not_found = || InstanceError::NotFound(format!("workflow {id}"));
        let meta = self.data.workflows.meta(id).await?.ok_or_else(not_found)?;
        let role = self.data.projects.role(&caller.user, &meta.project_id).await?.ok_or_else(not_found)?;
        if !role.can(scope) {
            return Err(InstanceError::Forbidden(format!("you lack the permission {scope} on workflow {id}")));
        }
        Ok((meta, role))
    }
}
