"""GraphQL types, queries and mutations for research reports."""

import graphene
from django.db.models import Prefetch
from django.urls import reverse
from graphene import relay
from graphene.types.generic import GenericScalar
from graphene_django import DjangoObjectType

from config.graphql.corpora import readable_corpus
from config.graphql.errors import BaseMutation, require_user
from config.graphql.ids import decode_id, decode_ids, encode_id
from config.graphql.pagination import BoundedConnectionField
from config.ratelimit import rate, rate_limit_refund
from corpora.graphql import CorpusNode, PassageNode, corpora_with_counts
from corpora.models import Passage
from llms.providers import masked_spec
from research.constants import DEPTH_PRESETS
from research.models import ReportStatus, ReportStrategy, ResearchReport
from research.selectors import report_answers, report_conjunctions, report_list, report_progress_summary
from research.services import report_cancel, report_resume, report_start

ReportStatusEnum = graphene.Enum("ResearchReportStatus", [(s, s) for s in ReportStatus.values])
ReportDepthEnum = graphene.Enum("ResearchDepth", [(d.upper(), d) for d in DEPTH_PRESETS])


ReportStrategyEnum = graphene.Enum("ResearchStrategy", [(s.upper(), s) for s in ReportStrategy.values])


class ReportProgress(graphene.ObjectType):
    step_count = graphene.Int(required=True)
    tool_call_count = graphene.Int(required=True)
    findings_count = graphene.Int(required=True)
    sources_count = graphene.Int(required=True)
    max_steps = graphene.Int(required=True)
    last_progress_at = graphene.DateTime()
    phase = graphene.String(
        description="planning, researching, sweeping, rereading, writing, reviewing, or the end status."
    )
    level = graphene.Int(description="The research level under way (1 = the plan's sub-questions).")
    levels = graphene.Int(description="The levels the depth allows.")
    documents_swept = graphene.Int(description="Candidate documents judged so far by the sweep.")
    documents_total = graphene.Int(description="Candidate documents the sweep will judge.")
    documents_reread = graphene.Int(
        description="Documents the sweep turned down that were judged again before a draft, with a "
        "passage a researcher quoted from them since."
    )
    direction = graphene.String(description="The direction a researcher is pursuing now.")
    model_requests = graphene.Int(description="Model requests spent (every role).")


class Citation(graphene.ObjectType):
    footnote = graphene.Int(required=True)
    passage_id = graphene.ID(required=True)
    document_id = graphene.ID(required=True)
    document_title = graphene.String()
    source_name = graphene.String()
    page = graphene.Int()
    passage_number = graphene.Int(
        description="The passage's place in its document, from 1; null in reports written before."
    )
    quote = graphene.String(required=True)
    start = graphene.Int(required=True)
    end = graphene.Int(required=True)
    passage = graphene.Field(PassageNode, description="The cited passage (null if it was deleted).")


class Finding(graphene.ObjectType):
    finding_id = graphene.Int(required=True, description="The finding's number in this report.")
    claim = graphene.String(required=True)
    quote = graphene.String(required=True)
    passage_id = graphene.ID(required=True)
    document_id = graphene.ID()
    section = graphene.String()
    position = graphene.String(description="The position the document takes, when the judge named one.")
    origin = graphene.String(description="researcher, sweep, follow-up or gap.")


class AnswerDocument(graphene.ObjectType):
    document_id = graphene.ID(required=True)
    title = graphene.String(description="The document's title (null once it is deleted).")
    addresses = graphene.Boolean(
        required=True,
        description="Whether the document addresses the question: the sweep's judge found so, or a "
        "cited finding for the question quotes it.",
    )
    position = graphene.String(description="The position its finding takes, when the judge named one.")
    quote = graphene.String(description="The quote of its first finding for the question.")
    footnotes = graphene.List(
        graphene.NonNull(graphene.Int), required=True, description="The report's footnotes citing it."
    )


class ReportAnswer(graphene.ObjectType):
    index = graphene.Int(required=True, description="The sub-question's place in the plan.")
    question = graphene.String(required=True, description="The sub-question researched and judged.")
    asked = graphene.String(
        description="The question as asked in the negative ('which contracts do not ...'), answered "
        "by the documents that do not address `question`; null otherwise."
    )
    swept = graphene.Boolean(required=True, description="Whether every candidate document was judged.")
    documents_examined = graphene.Int(required=True, description="Documents the sweep judged for it.")
    documents = graphene.List(
        graphene.NonNull(AnswerDocument),
        required=True,
        description="Those addressing it first, then those examined that do not, by title.",
    )


class ReportConjunction(graphene.ObjectType):
    question = graphene.String(
        required=True,
        description="A question of the request about two clauses ('... both X and Y?', '... X but no Y?').",
    )
    of = graphene.List(
        graphene.NonNull(graphene.Int), required=True, description="The plan indices of its two questions."
    )
    documents = graphene.List(
        graphene.NonNull(AnswerDocument),
        required=True,
        description="The documents answering both, with their finding for the first question.",
    )


class ResearchReportNode(DjangoObjectType):
    status = ReportStatusEnum(required=True)
    depth = ReportDepthEnum(required=True)
    strategy = ReportStrategyEnum(
        description="fast (one retrieval round) or deep; null until the run starts."
    )
    breadth = graphene.Int(required=True)
    model = graphene.String(description="The model this run asked for; null: the configured ones.")
    time_limit_seconds = graphene.Int(required=True)
    plan = GenericScalar(
        description=(
            "The sub-questions: [{question, queries, sweep, asked?}]; `asked` is a question asked in "
            "the negative ('which contracts do not ...'), `question` then its affirmative form."
        )
    )
    progress = graphene.Field(ReportProgress, required=True)
    citations = graphene.List(graphene.NonNull(Citation), required=True)
    findings = graphene.List(graphene.NonNull(Finding), required=True)
    answers = graphene.List(
        graphene.NonNull(ReportAnswer),
        required=True,
        description="Per sub-question of the plan, the documents that answer it: the report's "
        "per-document table as data.",
    )
    conjunctions = graphene.List(
        graphene.NonNull(ReportConjunction),
        required=True,
        description="The request's questions about two clauses, answered by the documents answering both.",
    )
    warnings = graphene.List(graphene.NonNull(graphene.String), required=True)
    model_usage = GenericScalar()
    tool_call_log = GenericScalar()
    duration_seconds = graphene.Float()
    url = graphene.String(required=True, description="The report page.")
    corpus = graphene.Field(CorpusNode, required=True)

    class Meta:
        model = ResearchReport
        name = "ResearchReport"
        interfaces = (relay.Node,)
        fields = (
            "title",
            "slug",
            "prompt",
            "rubric",
            "created",
            "started_at",
            "completed_at",
            "last_progress_at",
            "error",
            "content",
            "retry_count",
            "cancel_requested",
            "breadth",
            "time_limit_seconds",
        )

    @classmethod
    def get_queryset(cls, queryset, info):
        visible = report_list(user=info.context.user).values("pk")
        return queryset.filter(pk__in=visible).prefetch_related(
            corpora_with_counts(),
            # The passages and their documents without the heavy columns (embedding, full text).
            Prefetch(
                "cited_passages",
                queryset=Passage.objects.defer("embedding")
                .select_related("document__corpus")
                .defer("document__text"),
            ),
        )

    def resolve_status(self, info) -> str:
        return str(ReportStatus(self.status).value)

    def resolve_depth(self, info) -> str:
        return str(self.depth)

    def resolve_strategy(self, info) -> str | None:
        return self.strategy or None

    def resolve_model(self, info) -> str | None:
        return masked_spec(self.model) or None

    def resolve_progress(self, info) -> ReportProgress:
        return ReportProgress(**report_progress_summary(report=self))

    def resolve_citations(self, info) -> list[Citation]:
        passages = {p.pk: p for p in self.cited_passages.all()}  # prefetched: no query per citation
        return [
            Citation(
                footnote=c["footnote"],
                passage_id=encode_id("Passage", c["passage_id"]),
                document_id=encode_id("Document", c["document_id"]),
                document_title=c.get("document_title"),
                source_name=c.get("source_name"),
                page=c.get("page"),
                passage_number=c.get("passage_number"),
                quote=c["quote"],
                start=c["start"],
                end=c["end"],
                passage=passages.get(c["passage_id"]),
            )
            for c in self.citations
        ]

    def resolve_findings(self, info) -> list[Finding]:
        return [
            Finding(
                finding_id=f["id"],
                claim=f["claim"],
                quote=f["quote"],
                passage_id=encode_id("Passage", f["passage_id"]),
                document_id=encode_id("Document", f["document_id"]),
                section=f.get("section"),
                position=f.get("position"),
                origin=f.get("origin"),
            )
            for f in self.findings
        ]

    def resolve_answers(self, info) -> list[ReportAnswer]:
        return [
            ReportAnswer(**{**answer, "documents": _answer_documents(answer)}) for answer in _answers(self)
        ]

    def resolve_conjunctions(self, info) -> list[ReportConjunction]:
        return [
            ReportConjunction(**{**both, "documents": _answer_documents(both)})
            for both in report_conjunctions(report=self, answers=_answers(self))
        ]

    def resolve_duration_seconds(self, info) -> float | None:
        if self.completed_at is None:
            return None
        return round((self.completed_at - (self.started_at or self.created)).total_seconds(), 3)

    def resolve_url(self, info) -> str:
        return reverse("research:report-detail", kwargs={"slug": self.slug})


def _answers(report: ResearchReport) -> list[dict]:
    """report_answers, computed once per report object of a query that selects both `answers`
    and `conjunctions`."""
    cached = getattr(report, "_answers_cache", None)
    if cached is None:
        cached = report._answers_cache = report_answers(report=report)
    return cached


def _answer_documents(answer: dict) -> list[AnswerDocument]:
    return [
        AnswerDocument(**{**d, "document_id": encode_id("Document", d["document_id"])})
        for d in answer["documents"]
    ]


class ResearchQuery(graphene.ObjectType):
    research_report = graphene.Field(ResearchReportNode, id=graphene.ID(required=True))
    research_report_by_slug = graphene.Field(ResearchReportNode, slug=graphene.String(required=True))
    research_reports = BoundedConnectionField(
        ResearchReportNode, corpus_id=graphene.ID(), status=ReportStatusEnum()
    )

    def resolve_research_report(root, info, id):
        pk = decode_id(id, "ResearchReport")
        return ResearchReportNode.get_queryset(ResearchReport.objects.all(), info).filter(pk=pk).first()

    def resolve_research_report_by_slug(root, info, slug):
        return (
            ResearchReportNode.get_queryset(ResearchReport.objects.all(), info)
            .filter(slug=slug[:100])
            .first()
        )

    def resolve_research_reports(root, info, corpus_id=None, status=None, **kwargs):
        queryset = ResearchReport.objects.order_by("-created", "-pk")
        if corpus_id is not None:
            queryset = queryset.filter(corpus_id=decode_id(corpus_id, "Corpus", field="corpus_id"))
        if status is not None:
            queryset = queryset.filter(status=getattr(status, "value", status))
        # The connection field applies ResearchReportNode.get_queryset (visibility, prefetches) once.
        return queryset


class _ResearchStart(BaseMutation):
    """A mutation that starts a run: the view counts it against the research rate before it
    runs; refused (an empty prompt, a corpus not found, a run already going), it is given back."""

    class Meta:
        abstract = True

    @classmethod
    def mutate(cls, root, info, **data):
        payload = super().mutate(root, info, **data)
        user = info.context.user
        if payload.errors and user.is_authenticated:
            rate_limit_refund(scope="research", key=f"user:{user.pk}", rate=rate("research"))
        return payload


class StartResearchReport(_ResearchStart):
    report = graphene.Field(ResearchReportNode)

    class Arguments:
        corpus_id = graphene.ID(required=True)
        prompt = graphene.String(required=True)
        title = graphene.String()
        depth = ReportDepthEnum()
        max_steps = graphene.Int()
        rubric = graphene.String()
        document_ids = graphene.List(graphene.NonNull(graphene.ID))
        breadth = graphene.Int(description="Sub-questions at the first level (default: the depth's).")
        time_limit_seconds = graphene.Int(description="The run's time limit (default: the depth's).")
        model = graphene.String(description="A model this server offers, for this run only.")

    @classmethod
    def perform(
        cls,
        root,
        info,
        corpus_id,
        prompt,
        title=None,
        depth=None,
        max_steps=None,
        rubric=None,
        document_ids=None,
        breadth=None,
        time_limit_seconds=None,
        model=None,
    ):
        user = require_user(info)
        corpus = readable_corpus(user=user, corpus_id=corpus_id)
        report = report_start(
            user=user,
            corpus=corpus,
            prompt=prompt,
            title=title,
            depth=getattr(depth, "value", depth),
            max_steps=max_steps,
            rubric=rubric,
            document_ids=decode_ids(document_ids, "Document", field="document_ids"),
            breadth=breadth,
            time_limit_seconds=time_limit_seconds,
            model=model,
        )
        return {"report": report}


class CancelResearchReport(BaseMutation):
    # The report, for its creator; an administrator stopping another user's run reads only its
    # status (the API shows everyone their own reports only).
    report = graphene.Field(ResearchReportNode)
    status = graphene.Field(ReportStatusEnum)

    class Arguments:
        id = graphene.ID(required=True)

    @classmethod
    def perform(cls, root, info, id):
        user = require_user(info)
        report = report_cancel(user=user, report_id=decode_id(id, "ResearchReport"))
        status = ReportStatus(report.status).value
        return {"report": report if report.creator_id == user.pk else None, "status": status}


class ResumeResearchReport(_ResearchStart):
    report = graphene.Field(ResearchReportNode)

    class Arguments:
        id = graphene.ID(required=True)

    @classmethod
    def perform(cls, root, info, id):
        user = require_user(info)
        return {"report": report_resume(user=user, report_id=decode_id(id, "ResearchReport"))}


class ResearchMutation(graphene.ObjectType):
    start_research_report = StartResearchReport.Field()
    cancel_research_report = CancelResearchReport.Field()
    resume_research_report = ResumeResearchReport.Field()
