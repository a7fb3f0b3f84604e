//! The workspace around workflows: projects, folders, tags and the cleanup
//! of test executions (the agent's `workspace` tool, MCP `search_projects`
//! and `search_folders`). Folders and tags are the same records
//! `workflows(list)` and `search_workflows` read, so a move or a tag shows up
//! there at once.
//!
//! Scopes: `folder:read|create|delete` in the folder's project,
//! `workflow:update` to move or tag a workflow, `workflow:execute` to delete
//! its test executions. Tags are instance-wide, as in n8n.

use crate::access::Caller;
use crate::{Instance, InstanceError};
use store::data::executions::ExecutionMode;
use store::data::folders::{self, Folder, FolderPage};
use store::data::tags::Tag;
use store::data::users_projects::{ProjectAccess, ProjectPage, ProjectSearch};
use store::data::workflows::{FolderDeleted, WorkflowMeta};

/// The executions `cleanup-test-executions` removes: runs started by hand
/// (the editor's and the agent's test runs), never production ones.
pub const TEST_EXECUTION_MODES: &[ExecutionMode] = &[ExecutionMode::Manual];

/// The default age below which test executions are kept.
pub const DEFAULT_CLEANUP_HOURS: f64 = 1.0;

/// What deleting a folder will do, worked out before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderDeletionPlan {
    pub folder: Folder,
    /// Folders below it, deleted with it.
    pub subfolders: usize,
    /// Workflows in it or below it (archived ones included).
    pub workflows: usize,
    /// Where those workflows go; `None`: to the project root, archived.
    pub transfer_to: Option<Folder>,
}

impl Instance {
    /// The caller's projects (personal first) and the id of the one this
    /// caller's writes go to.
    pub async fn projects(&self, caller: &Caller) -> Result<(Vec<ProjectAccess>, String), InstanceError> {
        let current = self.write_project(caller, "project:read").await?;
        Ok((self.data.projects.projects_of(&caller.user).await?, current))
    }

    /// `search_projects`: the caller's projects by name and type.
    pub async fn search_projects(&self, caller: &Caller, search: &ProjectSearch) -> Result<ProjectPage, InstanceError> {
        self.user(caller).await?;
        Ok(self.data.projects.search(&caller.user, search).await?)
    }

    /// Every folder of the project (the named one, else the caller's), with paths.
    pub async fn list_folders(&self, caller: &Caller, project_id: Option<&str>) -> Result<(String, Vec<Folder>), InstanceError> {
        let project = self.target_project(caller, project_id, "folder:read").await?;
        let all = self.data.folders.list(&project).await?;
        Ok((project, all))
    }

    /// `search_folders`: case-insensitive name substring, at most `limit`.
    pub async fn search_folders(
        &self,
        caller: &Caller,
        project_id: &str,
        query: Option<&str>,
        limit: usize,
    ) -> Result<FolderPage, InstanceError> {
        self.require_project(caller, project_id, "folder:read").await?;
        Ok(self.data.folders.search(project_id, query, Some(limit)).await?)
    }

    pub async fn create_folder(
        &self,
        caller: &Caller,
        project_id: Option<&str>,
        name: &str,
        parent_folder_id: Option<&str>,
    ) -> Result<Folder, InstanceError> {
        let project = self.target_project(caller, project_id, "folder:create").await?;
        Ok(self.data.folders.create(&project, name, parent_folder_id).await?)
    }

    /// Checks a folder deletion and says what it will do (nothing changes).
    pub async fn plan_folder_deletion(
        &self,
        caller: &Caller,
        project_id: Option<&str>,
        folder_id: &str,
        transfer_to: Option<&str>,
    ) -> Result<FolderDeletionPlan, InstanceError> {
        let project = self.target_project(caller, project_id, "folder:delete").await?;
        let all = self.data.folders.list(&project).await?;
        let folder = all
            .iter()
            .find(|f| f.id == folder_id)
            .cloned()
            .ok_or_else(|| InstanceError::NotFound(format!("folder {folder_id} in project {project}")))?;
        let doomed = folders::subtree(&all, folder_id);
        let transfer_to = match transfer_to {
            None => None,
            Some(t) if doomed.iter().any(|d| d == t) => {
                return Err(InstanceError::Invalid(format!(
                    "cannot move the contents of {:?} into {t}: it is deleted with it",
                    folder.path
                )))
            }
            Some(t) => Some(
                all.iter()
                    .find(|f| f.id == t)
                    .cloned()
                    .ok_or_else(|| InstanceError::NotFound(format!("transfer folder {t} in project {project}")))?,
            ),
        };
        let workflows = self.data.workflows.count_in_folders(&project, &doomed).await?;
        Ok(FolderDeletionPlan { folder, subfolders: doomed.len() - 1, workflows, transfer_to })
    }

    /// Deletes a folder and its subfolders; their workflows move to
    /// `transfer_to`, or to the project root archived.
    pub async fn delete_folder(
        &self,
        caller: &Caller,
        project_id: Option<&str>,
        folder_id: &str,
        transfer_to: Option<&str>,
    ) -> Result<(FolderDeletionPlan, FolderDeleted), InstanceError> {
        let plan = self.plan_folder_deletion(caller, project_id, folder_id, transfer_to).await?;
        let done = self
            .data
            .workflows
            .delete_folder(&plan.folder.project_id, folder_id, plan.transfer_to.as_ref().map(|f| f.id.as_str()))
            .await?;
        Ok((plan, done))
    }

    /// Moves a workflow into a folder of its project (`None`: the root).
    pub async fn move_workflow_to_folder(
        &self,
        caller: &Caller,
        workflow_id: &str,
        folder_id: Option<&str>,
    ) -> Result<(WorkflowMeta, Option<Folder>), InstanceError> {
        let (meta, _) = self.workflow_access(caller, workflow_id, "workflow:update").await?;
        let folder = self.data.workflows.move_to_folder(&meta.id, folder_id).await?;
        Ok((meta, folder))
    }

    /// Every tag of the instance, by name.
    pub async fn list_tags(&self, caller: &Caller) -> Result<Vec<Tag>, InstanceError> {
        self.user(caller).await?;
        Ok(self.data.tags.list().await?)
    }

    /// Replaces the workflow's tags with these names, creating the missing
    /// tags (names match case-insensitively; a repeated name counts once).
    pub async fn tag_workflow(
        &self,
        caller: &Caller,
        workflow_id: &str,
        names: &[String],
    ) -> Result<(WorkflowMeta, Vec<Tag>), InstanceError> {
        let mut unique: Vec<String> = Vec::new();
        for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            if !unique.iter().any(|u| u.eq_ignore_ascii_case(n)) {
                unique.push(n.to_owned());
            }
        }
        if unique.is_empty() {
            return Err(InstanceError::Invalid("name at least one tag".into()));
        }
        let (meta, _) = self.workflow_access(caller, workflow_id, "workflow:update").await?;
        let tags = self.data.tags.ensure(&unique).await?;
        let ids: Vec<String> = tags.iter().map(|t| t.id.clone()).collect();
        let applied = self.data.workflows.set_tags(&meta.id, &ids).await?;
        Ok((meta, applied))
    }

    /// Deletes the workflow's finished test executions that started more
    /// than `older_than_hours` ago; returns the workflow and how many went.
    pub async fn cleanup_test_executions(
        &self,
        caller: &Caller,
        workflow_id: &str,
        older_than_hours: f64,
    ) -> Result<(WorkflowMeta, usize), InstanceError> {
        if !older_than_hours.is_finite() || older_than_hours < 0.0 {
            return Err(InstanceError::Invalid(format!("olderThanHours must be 0 or more, got {older_than_hours}")));
        }
        let (meta, _) = self.workflow_access(caller, workflow_id, "workflow:execute").await?;
        let cutoff = store::data::db::iso_secs_ago((older_than_hours * 3600.0) as u64);
        let n = self.data.executions.delete_for_workflow(&meta.id, TEST_EXECUTION_MODES, Some(&cutoff)).await?;
        Ok((meta, n))
    }
}
