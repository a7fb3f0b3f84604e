//! Users and projects: every user has a personal project; team projects have
//! members with a role. A role maps to the scope strings the MCP outputs
//! carry (`scopes`, `canExecute`).
//!
//! Items (Instance table):
//! - user: `pk=user#<id>, sk=user`
//! - project: `pk=project#<id>, sk=project`, `gsi1pk=projects` (instance-wide listing)
//! - membership: `pk=project#<id>, sk=member#<user>`, `gsi1pk=member#<user>` (a user's projects)

use super::db::{self, key, to_item, tx_put, Item, Table};
use crate::error::StoreError;
use protocol::UserId;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectType {
    Personal,
    Team,
}

impl ProjectType {
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectType::Personal => "personal",
            ProjectType::Team => "team",
        }
    }
}

/// A member's role in a project. The personal project's user is its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectRole {
    Viewer,
    Editor,
    Admin,
    Owner,
}

const VIEWER: &[&str] =
    &["project:read", "folder:read", "workflow:read", "credential:read", "dataTable:read", "dataTable:readRow"];
const EDITOR: &[&str] = &[
    "workflow:create",
    "workflow:update",
    "workflow:delete",
    "workflow:execute",
    "workflow:publish",
    "workflow:move",
    "folder:create",
    "folder:update",
    "folder:delete",
    "credential:create",
    "credential:update",
    "credential:delete",
    "dataTable:create",
    "dataTable:update",
    "dataTable:delete",
    "dataTable:writeRow",
];
const ADMIN: &[&str] =
    &["project:update", "workflow:share", "credential:share", "credential:move", "project:manageMembers"];
const OWNER: &[&str] = &["project:delete"];

impl ProjectRole {
    /// Every scope this role grants, across resources (each role includes the
    /// ones below it).
    pub fn scopes(self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = VIEWER.to_vec();
        if self >= ProjectRole::Editor {
            out.extend_from_slice(EDITOR);
        }
        if self >= ProjectRole::Admin {
            out.extend_from_slice(ADMIN);
        }
        if self >= ProjectRole::Owner {
            out.extend_from_slice(OWNER);
        }
        out
    }

    /// The scopes for one resource kind: `scopes_for("workflow")` →
    /// `["workflow:read", "workflow:update", ...]`, sorted.
    pub fn scopes_for(self, resource: &str) -> Vec<String> {
        let mut out: Vec<String> =
            self.scopes().into_iter().filter(|s| s.split(':').next() == Some(resource)).map(str::to_owned).collect();
        out.sort();
        out
    }

    pub fn can(self, scope: &str) -> bool {
        self.scopes().contains(&scope)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub id: UserId,
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub personal_project_id: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ProjectType,
    pub created_at: String,
}

/// A project as one user sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectAccess {
    #[serde(flatten)]
    pub project: Project,
    pub role: ProjectRole,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub user_id: UserId,
    pub project_id: String,
    pub role: ProjectRole,
}

#[derive(Debug, Clone, Default)]
pub struct ProjectSearch {
    /// Case-insensitive substring of the name.
    pub query: Option<String>,
    pub kind: Option<ProjectType>,
    /// Capped at 100.
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProjectPage {
    pub data: Vec<ProjectAccess>,
    /// Every match, before `limit`.
    pub count: usize,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UserItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    user: User,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectItem {
    pk: String,
    sk: String,
    gsi1pk: String,
    gsi1sk: String,
    #[serde(flatten)]
    project: Project,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MemberItem {
    pk: String,
    sk: String,
    gsi1pk: String,
    gsi1sk: String,
    #[serde(flatten)]
    member: Member,
}

pub(crate) fn project_pk(id: &str) -> String {
    format!("project#{id}")
}

fn member_item(m: &Member) -> Result<Item, StoreError> {
    to_item(&MemberItem {
        pk: project_pk(&m.project_id),
        sk: format!("member#{}", m.user_id),
        gsi1pk: format!("member#{}", m.user_id),
        gsi1sk: project_pk(&m.project_id),
        member: m.clone(),
    })
}

fn project_item(p: &Project) -> Result<Item, StoreError> {
    to_item(&ProjectItem {
        pk: project_pk(&p.id),
        sk: "project".into(),
        gsi1pk: "projects".into(),
        gsi1sk: format!("{}#{}", p.kind.as_str(), p.id),
        project: p.clone(),
    })
}

fn check_name(name: &str) -> Result<String, StoreError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 255 {
        return Err(StoreError::Invalid("project name must be 1–255 characters".into()));
    }
    Ok(name.to_owned())
}

/// Users, projects and memberships.
#[derive(Clone, Debug)]
pub struct Projects {
    table: Table,
}

impl Projects {
    pub fn new(table: Table) -> Self {
        Projects { table }
    }

    /// Creates a user and their personal project in one transaction; a
    /// second create of the same id is a conflict.
    pub async fn create_user(
        &self,
        id: &UserId,
        email: &str,
        first_name: Option<&str>,
        last_name: Option<&str>,
    ) -> Result<(User, Project), StoreError> {
        if !protocol::ids::is_valid_path_id(id.as_str()) {
            return Err(StoreError::Invalid(format!("invalid user id {:?}", id.as_str())));
        }
        let now = db::now_iso();
        let display = match (first_name, last_name) {
            (Some(f), Some(l)) => format!("{f} {l}"),
            (Some(f), None) => f.to_owned(),
            _ => email.to_owned(),
        };
        let project = Project {
            id: db::new_id(),
            name: format!("{display} <{email}>"),
            kind: ProjectType::Personal,
            created_at: now.clone(),
        };
        let user = User {
            id: id.clone(),
            email: email.to_owned(),
            first_name: first_name.map(str::to_owned),
            last_name: last_name.map(str::to_owned),
            personal_project_id: project.id.clone(),
            created_at: now,
        };
        let user_item = to_item(&UserItem { pk: format!("user#{id}"), sk: "user".into(), user: user.clone() })?;
        let member = Member { user_id: id.clone(), project_id: project.id.clone(), role: ProjectRole::Owner };
        let t = &self.table.name;
        self.table
            .transact(
                vec![
                    tx_put(t, user_item, Some("attribute_not_exists(pk)"))?,
                    tx_put(t, project_item(&project)?, Some("attribute_not_exists(pk)"))?,
                    tx_put(t, member_item(&member)?, None)?,
                ],
                &format!("user {id} already exists"),
            )
            .await?;
        Ok((user, project))
    }

    pub async fn user(&self, id: &UserId) -> Result<Option<User>, StoreError> {
        Ok(self.table.get::<UserItem>(&format!("user#{id}"), "user").await?.map(|i| i.user))
    }

    pub async fn project(&self, id: &str) -> Result<Option<Project>, StoreError> {
        Ok(self.table.get::<ProjectItem>(&project_pk(id), "project").await?.map(|i| i.project))
    }

    /// Creates a team project owned by `owner`.
    pub async fn create_team_project(&self, name: &str, owner: &UserId) -> Result<Project, StoreError> {
        let project =
            Project { id: db::new_id(), name: check_name(name)?, kind: ProjectType::Team, created_at: db::now_iso() };
        let member = Member { user_id: owner.clone(), project_id: project.id.clone(), role: ProjectRole::Owner };
        let t = &self.table.name;
        self.table
            .transact(
                vec![
                    tx_put(t, project_item(&project)?, Some("attribute_not_exists(pk)"))?,
                    tx_put(t, member_item(&member)?, None)?,
                ],
                "project id collision",
            )
            .await?;
        Ok(project)
    }

    /// Adds a member or changes their role. Personal projects have exactly
    /// one member.
    pub async fn set_member(&self, project_id: &str, user: &UserId, role: ProjectRole) -> Result<(), StoreError> {
        let project =
            self.project(project_id).await?.ok_or_else(|| StoreError::NotFound(format!("project {project_id}")))?;
        if project.kind == ProjectType::Personal {
            return Err(StoreError::Invalid("a personal project has no other members".into()));
        }
        let member = Member { user_id: user.clone(), project_id: project_id.to_owned(), role };
        let t = &self.table.name;
        // The condition keeps a member from being added to a project deleted meanwhile.
        self.table
            .transact(
                vec![
                    db::tx_check(t, key(project_pk(project_id), "project"), "attribute_exists(pk)", vec![])?,
                    tx_put(t, member_item(&member)?, None)?,
                ],
                &format!("project {project_id} changed"),
            )
            .await
    }

    pub async fn remove_member(&self, project_id: &str, user: &UserId) -> Result<(), StoreError> {
        self.table.count();
        self.table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .set_key(Some(key(project_pk(project_id), format!("member#{user}"))))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }

    pub async fn members(&self, project_id: &str) -> Result<Vec<Member>, StoreError> {
        self.table
            .query_prefix(&project_pk(project_id), "member#", false)
            .await?
            .into_iter()
            .map(|i| db::from_item::<MemberItem>(i).map(|m| m.member))
            .collect()
    }

    /// The user's role in a project, `None` when they are not a member.
    pub async fn role(&self, user: &UserId, project_id: &str) -> Result<Option<ProjectRole>, StoreError> {
        Ok(self
            .table
            .get::<MemberItem>(&project_pk(project_id), &format!("member#{user}"))
            .await?
            .map(|m| m.member.role))
    }

    /// Every project the user belongs to, with their role (personal first,
    /// then by name).
    pub async fn projects_of(&self, user: &UserId) -> Result<Vec<ProjectAccess>, StoreError> {
        let memberships: Vec<Member> = self
            .table
            .query_gsi(&format!("member#{user}"))
            .await?
            .into_iter()
            .map(|i| db::from_item::<MemberItem>(i).map(|m| m.member))
            .collect::<Result<_, _>>()?;
        let keys = memberships.iter().map(|m| key(project_pk(&m.project_id), "project")).collect();
        let projects: Vec<Project> = self
            .table
            .batch_get(keys)
            .await?
            .into_iter()
            .map(|i| db::from_item::<ProjectItem>(i).map(|p| p.project))
            .collect::<Result<_, _>>()?;
        let mut out: Vec<ProjectAccess> = projects
            .into_iter()
            .filter_map(|p| {
                let role = memberships.iter().find(|m| m.project_id == p.id)?.role;
                Some(ProjectAccess { project: p, role })
            })
            .collect();
        out.sort_by(|a, b| {
            (a.project.kind != ProjectType::Personal, a.project.name.to_lowercase())
                .cmp(&(b.project.kind != ProjectType::Personal, b.project.name.to_lowercase()))
        });
        Ok(out)
    }

    /// `search_projects`: the user's projects filtered by name and type.
    pub async fn search(&self, user: &UserId, search: &ProjectSearch) -> Result<ProjectPage, StoreError> {
        let q = search.query.as_deref().map(str::to_lowercase).filter(|q| !q.is_empty());
        let all: Vec<ProjectAccess> = self
            .projects_of(user)
            .await?
            .into_iter()
            .filter(|p| search.kind.is_none_or(|k| p.project.kind == k))
            .filter(|p| q.as_ref().is_none_or(|q| p.project.name.to_lowercase().contains(q.as_str())))
            .collect();
        let count = all.len();
        let limit = search.limit.unwrap_or(100).clamp(1, 100);
        Ok(ProjectPage { data: all.into_iter().take(limit).collect(), count })
    }

    /// Requires `scope` for `user` in `project_id`; a non-member gets
    /// `NotFound` (they must not learn the project exists).
    pub async fn require(&self, user: &UserId, project_id: &str, scope: &str) -> Result<ProjectRole, StoreError> {
        match self.role(user, project_id).await? {
            None => Err(StoreError::NotFound(format!("project {project_id}"))),
            Some(role) if role.can(scope) => Ok(role),
            Some(_) => Err(StoreError::Invalid(format!("missing permission {scope} in project {project_id}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_nest_and_map_to_scopes() {
        assert!(ProjectRole::Viewer.can("workflow:read"));
        assert!(!ProjectRole::Viewer.can("workflow:execute"));
        assert!(ProjectRole::Editor.can("workflow:execute") && ProjectRole::Editor.can("dataTable:writeRow"));
        assert!(!ProjectRole::Editor.can("credential:share"));
        assert!(ProjectRole::Owner.can("project:delete") && !ProjectRole::Admin.can("project:delete"));
        assert_eq!(ProjectRole::Viewer.scopes_for("credential"), vec!["credential:read"]);
        assert!(ProjectRole::Editor.scopes_for("workflow").contains(&"workflow:publish".to_owned()));
    }
}
