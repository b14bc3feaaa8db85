"""The GraphQL documents the CLI sends."""

PROGRESS_FIELDS = """
fragment ProgressFields on ResearchReport {
  id status depth strategy title error created durationSeconds retryCount
  progress {
    stepCount maxSteps findingsCount sourcesCount lastProgressAt
    phase level levels documentsSwept documentsTotal documentsReread direction modelRequests
  }
}
"""

REPORT_FIELDS = """
fragment ReportFields on ResearchReport {
  id status depth strategy title content warnings durationSeconds retryCount error url created
  progress {
    stepCount maxSteps findingsCount sourcesCount lastProgressAt
    phase level levels documentsSwept documentsTotal documentsReread direction modelRequests
  }
  citations { footnote passageId documentId documentTitle sourceName page quote start end }
  answers {
    index question asked swept documentsExamined
    documents { documentId title addresses position quote footnotes }
  }
  conjunctions { question of documents { documentId title addresses position quote footnotes } }
}
"""

START_REPORT = (
    """
mutation Start($corpusId: ID!, $prompt: String!, $title: String, $depth: ResearchDepth,
               $maxSteps: Int, $rubric: String, $breadth: Int, $timeLimitSeconds: Int, $model: String) {
  startResearchReport(corpusId: $corpusId, prompt: $prompt, title: $title, depth: $depth,
                      maxSteps: $maxSteps, rubric: $rubric, breadth: $breadth,
                      timeLimitSeconds: $timeLimitSeconds, model: $model) {
    report { ...ProgressFields }
    errors { field message code }
  }
}
"""
    + PROGRESS_FIELDS
)

CANCEL_REPORT = (
    """
mutation Cancel($id: ID!) {
  cancelResearchReport(id: $id) {
    report { ...ProgressFields }
    errors { field message code }
  }
}
"""
    + PROGRESS_FIELDS
)

RESUME_REPORT = (
    """
mutation Resume($id: ID!) {
  resumeResearchReport(id: $id) {
    report { ...ProgressFields }
    errors { field message code }
  }
}
"""
    + PROGRESS_FIELDS
)

REPORT_PROGRESS = (
    """
query Progress($id: ID!) { researchReport(id: $id) { ...ProgressFields } }
"""
    + PROGRESS_FIELDS
)

REPORT = (
    """
query Report($id: ID!) { researchReport(id: $id) { ...ReportFields } }
"""
    + REPORT_FIELDS
)

REPORTS = """
query Reports($first: Int!, $after: String) {
  researchReports(first: $first, after: $after) {
    pageInfo { hasNextPage endCursor }
    edges { node { id status depth title created durationSeconds corpus { id name } } }
  }
}
"""

CORPORA = """
query Corpora($first: Int!, $after: String) {
  corpora(first: $first, after: $after) {
    pageInfo { hasNextPage endCursor }
    edges { node { id name documentCount passageCount created } }
  }
}
"""
