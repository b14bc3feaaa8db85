"""GraphQL types, queries and mutations for corpora, documents and passages. Managing a corpus
(rename, delete, share, delete a document) is its creator's; a user it is shared with reads,
searches and researches it."""

import graphene
from django.db.models import Count, IntegerField, OuterRef, Prefetch, Subquery
from graphene import relay
from graphene_django import DjangoObjectType

from config.graphql.errors import BaseMutation, require_user
from config.graphql.ids import decode_id, decode_ids, encode_id
from config.graphql.pagination import BoundedConnectionField
from corpora.constants import SEARCH_MAX_TOP_K, SEARCH_MODE_HYBRID, SEARCH_MODES
from corpora.models import Corpus, Document, Passage
from corpora.selectors import (
    corpus_get_for_creator,
    corpus_get_for_user,
    corpus_list,
    corpus_shared_with,
    document_get_for_user,
    embedded_passage_count,
    passage_search,
)
from corpora.services import (
    corpus_create,
    corpus_delete,
    corpus_rename,
    corpus_share,
    corpus_unshare,
    document_delete,
)
from research.exceptions import DocumentScopeInvalid


def _visible_corpus_ids(info) -> object:
    return corpus_list(user=info.context.user).values("pk")


def corpora_with_counts() -> Prefetch:
    """Prefetch for a `corpus` relation whose counts GraphQL may ask for: one query a page."""
    return Prefetch(
        "corpus",
        queryset=Corpus.objects.annotate(_documents=_count_of(Document), _passages=_count_of(Passage)),
    )


def _count_of(model) -> Subquery:
    """A per-corpus row count as a correlated subquery (no join across documents x passages)."""
    counted = model.objects.filter(corpus=OuterRef("pk")).order_by().values("corpus").annotate(n=Count("pk"))
    return Subquery(counted.values("n"), output_field=IntegerField())


class CorpusNode(DjangoObjectType):
    document_count = graphene.Int(required=True)
    passage_count = graphene.Int(required=True)
    embedded_passage_count = graphene.Int(
        required=True,
        description="Passages the configured embedding model has reached (one query per corpus); "
        "until then they are found by lexical search and hybrid's lexical leg.",
    )
    is_creator = graphene.Boolean(
        required=True, description="You created this corpus, so you may rename, delete, share and upload."
    )
    shared_with = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="Usernames the corpus is shared with; empty unless you are its creator.",
    )

    class Meta:
        model = Corpus
        name = "Corpus"
        interfaces = (relay.Node,)
        fields = ("name", "description", "created", "modified")

    @classmethod
    def get_queryset(cls, queryset, info):
        return queryset.filter(pk__in=_visible_corpus_ids(info)).annotate(
            _documents=_count_of(Document), _passages=_count_of(Passage)
        )

    # A corpus reached through a relation that was not prefetched with corpora_with_counts()
    # (a passage's document's corpus, say) has no annotation: count it then.
    def resolve_document_count(self, info) -> int:
        if not hasattr(self, "_documents"):
            return Document.objects.filter(corpus_id=self.pk).count()
        return self._documents or 0

    def resolve_passage_count(self, info) -> int:
        if not hasattr(self, "_passages"):
            return Passage.objects.filter(corpus_id=self.pk).count()
        return self._passages or 0

    def resolve_embedded_passage_count(self, info) -> int:
        return embedded_passage_count(corpus=self)

    def resolve_is_creator(self, info) -> bool:
        return self.creator_id == info.context.user.pk

    def resolve_shared_with(self, info) -> list[str]:
        if self.creator_id != info.context.user.pk:
            return []
        return corpus_shared_with(corpus=self)


class DocumentNode(DjangoObjectType):
    file_type = graphene.String(required=True)
    # Declared rather than converted: graphene-django resolves a converted foreign key to a type
    # with get_queryset through get_node, one query per row. The document is visible, so its
    # corpus is: the prefetched or joined one is returned as is.
    corpus = graphene.Field(CorpusNode, required=True)

    class Meta:
        model = Document
        name = "Document"
        interfaces = (relay.Node,)
        fields = ("title", "source_name", "page_count", "byte_size", "created")

    @classmethod
    def get_queryset(cls, queryset, info):
        return (
            queryset.filter(corpus_id__in=_visible_corpus_ids(info))
            .defer("text")
            .prefetch_related(corpora_with_counts())
        )


class PassageNode(DjangoObjectType):
    heading_path = graphene.List(graphene.NonNull(graphene.String), required=True)
    document = graphene.Field(DocumentNode, required=True)  # declared: see DocumentNode.corpus

    class Meta:
        model = Passage
        name = "Passage"
        interfaces = (relay.Node,)
        fields = ("text", "start", "end", "page", "ordinal", "is_heading", "word_count")

    @classmethod
    def get_queryset(cls, queryset, info):
        return (
            queryset.filter(corpus_id__in=_visible_corpus_ids(info))
            .defer("embedding")
            .select_related("document__corpus")
            .defer("document__text")
        )

    def resolve_heading_path(self, info) -> list[str]:
        return list(self.heading_path or [])


SearchMode = graphene.Enum("SearchMode", [(mode.upper(), mode) for mode in SEARCH_MODES])


class SearchHit(graphene.ObjectType):
    passage = graphene.Field(PassageNode, required=True)
    score = graphene.Float(required=True, description="The ranking's score; higher is better.")


class CorporaQuery(graphene.ObjectType):
    corpora = BoundedConnectionField(CorpusNode)
    corpus = graphene.Field(CorpusNode, id=graphene.ID(required=True))
    documents = BoundedConnectionField(DocumentNode, corpus_id=graphene.ID(required=True))
    passage = graphene.Field(PassageNode, id=graphene.ID(required=True))
    search = graphene.List(
        graphene.NonNull(SearchHit),
        required=True,
        corpus_id=graphene.ID(required=True),
        query=graphene.String(required=True),
        top_k=graphene.Int(default_value=10, description=f"1 to {SEARCH_MAX_TOP_K}"),
        mode=SearchMode(default_value=SEARCH_MODE_HYBRID),
        document_ids=graphene.List(graphene.NonNull(graphene.ID), description="Only these documents."),
        description="Passages of a corpus you may read, best first, as `manage.py search` ranks them.",
    )

    def resolve_search(root, info, corpus_id, query, top_k, mode, document_ids=None):
        corpus = corpus_get_for_user(
            user=info.context.user, corpus_id=decode_id(corpus_id, "Corpus", field="corpus_id")
        )
        scope = decode_ids(document_ids, "Document", field="document_ids")
        if scope:
            # as startResearchReport: a document of another corpus is an error, not an empty answer
            found = set(corpus.documents.filter(pk__in=scope).values_list("pk", flat=True))
            missing = [encode_id("Document", pk) for pk in scope if pk not in found]
            if missing:
                raise DocumentScopeInvalid(
                    f"documents not in this corpus: {missing[:10]}", field="document_ids"
                )
        hits = passage_search(
            corpus=corpus,
            query=query,
            top_k=top_k,
            mode=getattr(mode, "value", mode),  # graphene hands over the enum member
            document_ids=scope,
        )
        return [SearchHit(passage=hit.passage, score=hit.score) for hit in hits]

    def resolve_corpora(root, info, **kwargs):
        return CorpusNode.get_queryset(Corpus.objects.order_by("name", "pk"), info)

    def resolve_corpus(root, info, id):
        pk = decode_id(id, "Corpus")
        return CorpusNode.get_queryset(Corpus.objects.all(), info).filter(pk=pk).first()

    def resolve_documents(root, info, corpus_id, **kwargs):
        pk = decode_id(corpus_id, "Corpus", field="corpus_id")
        # The connection field applies DocumentNode.get_queryset (visibility, prefetches) once.
        return Document.objects.filter(corpus_id=pk).order_by("title", "pk")

    def resolve_passage(root, info, id):
        pk = decode_id(id, "Passage")
        return PassageNode.get_queryset(Passage.objects.all(), info).filter(pk=pk).first()


# --- Mutations ------------------------------------------------------------------------------
class CreateCorpus(BaseMutation):
    corpus = graphene.Field(CorpusNode)

    class Arguments:
        name = graphene.String(required=True)

    @classmethod
    def perform(cls, root, info, name):
        return {"corpus": corpus_create(creator=require_user(info), name=name)}


class RenameCorpus(BaseMutation):
    corpus = graphene.Field(CorpusNode)

    class Arguments:
        id = graphene.ID(required=True)
        name = graphene.String(required=True)

    @classmethod
    def perform(cls, root, info, id, name):
        user = require_user(info)
        corpus = corpus_get_for_creator(user=user, corpus_id=decode_id(id, "Corpus"))
        return {"corpus": corpus_rename(user=user, corpus=corpus, name=name)}


class DeleteCorpus(BaseMutation):
    deleted_id = graphene.ID(description="The deleted corpus's id.")
    deleted_documents = graphene.Int()
    deleted_reports = graphene.Int(description="Research reports deleted with it (every user's).")

    class Arguments:
        id = graphene.ID(required=True)
        delete_reports = graphene.Boolean(
            default_value=False,
            description="Delete the corpus's research reports with it; without this a corpus with "
            "reports is refused (corpus_has_reports).",
        )

    @classmethod
    def perform(cls, root, info, id, delete_reports=False):
        user = require_user(info)
        corpus = corpus_get_for_creator(user=user, corpus_id=decode_id(id, "Corpus"))
        deleted = corpus_delete(user=user, corpus=corpus, delete_reports=bool(delete_reports))
        return {
            "deleted_id": encode_id("Corpus", deleted.corpus_id),
            "deleted_documents": deleted.documents,
            "deleted_reports": deleted.reports,
        }


class DeleteDocument(BaseMutation):
    deleted_id = graphene.ID(description="The deleted document's id.")
    corpus = graphene.Field(CorpusNode, description="The corpus it was in, as it is now.")

    class Arguments:
        id = graphene.ID(required=True)

    @classmethod
    def perform(cls, root, info, id):
        user = require_user(info)
        document = document_get_for_user(user=user, document_id=decode_id(id, "Document"))
        corpus = document_delete(user=user, document=document)
        return {"deleted_id": encode_id("Document", document.pk), "corpus": corpus}


class ShareCorpus(BaseMutation):
    corpus = graphene.Field(CorpusNode)
    # corpus_share grants view_corpus; UnshareCorpus is the same mutation with corpus_unshare.
    change = staticmethod(corpus_share)

    class Arguments:
        id = graphene.ID(required=True)
        username = graphene.String(required=True)

    @classmethod
    def perform(cls, root, info, id, username):
        user = require_user(info)
        corpus = corpus_get_for_creator(user=user, corpus_id=decode_id(id, "Corpus"))
        cls.change(user=user, corpus=corpus, username=username)
        return {"corpus": corpus}


class UnshareCorpus(ShareCorpus):
    change = staticmethod(corpus_unshare)


class CorporaMutation(graphene.ObjectType):
    create_corpus = CreateCorpus.Field()
    rename_corpus = RenameCorpus.Field()
    delete_corpus = DeleteCorpus.Field()
    delete_document = DeleteDocument.Field()
    share_corpus = ShareCorpus.Field()
    unshare_corpus = UnshareCorpus.Field()
