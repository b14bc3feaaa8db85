"""The bundled MiniLM's query embedding as one TorchScript call.

A search embeds its query on the model's inference thread (corpora.embedding.InferenceThread)
while its own thread ranks lexically, and a research worker runs many searches at once.
sentence-transformers' encode() dispatches a few hundred torch ops from Python and takes the
GIL back after each one, and each take-back can wait a whole switch interval: beside a busy
Python thread a query took 440 ms instead of 20 on this team's machine, beside a lexical
search 55 ms. The traced pipeline runs the whole forward pass without the GIL (13 ms alone
here, 45 ms beside a busy Python thread, 16 ms beside lexical searches). Its vectors equal
encode()'s (tests/corpora/test_embedding.py compares them), so query vectors stay comparable
with the stored passage vectors, which the batch pipeline keeps computing with encode()."""

import warnings

import numpy as np
import torch

try:
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling
except ImportError:  # sentence-transformers before 6
    from sentence_transformers.models import Normalize, Pooling
from tokenizers import Tokenizer


class MeanPooledBert(torch.nn.Module):
    """BERT, mean pooling over the attention mask, L2 normalisation: what the pipeline of
    all-MiniLM-L6-v2 (Transformer, Pooling(mean), Normalize) computes."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        tokens = self.bert(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            return_dict=False,
        )[0]
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2.0, dim=1)


class TracedQueryEncoder:
    """Built from a loaded SentenceTransformer; raises TypeError for a pipeline it does not
    reproduce (the caller then keeps encode())."""

    def __init__(self, model) -> None:
        modules = list(model)
        if (
            len(modules) != 3
            or not isinstance(modules[1], Pooling)
            or modules[1].get_config_dict().get("pooling_mode") != "mean"
            or not isinstance(modules[2], Normalize)
        ):
            raise TypeError(f"no traced encoder for this pipeline: {model}")
        self.max_length = int(model.max_seq_length)
        # The fast tokenizer's Rust core, set up as encode() tokenizes a single text.
        self._tokenizer = Tokenizer.from_str(model.tokenizer.backend_tokenizer.to_str())
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_length)
        module = MeanPooledBert(modules[0].auto_model).eval()
        # Traced on a padded example, so that the graph keeps applying the attention mask.
        example = _inputs([101, 7592, 102, 0, 0, 0, 0, 0], real=3)
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on Python-level branches
            self._module = torch.jit.freeze(torch.jit.trace(module, example, check_trace=False))

    def token_ids(self, text: str) -> list[int]:
        return self._tokenizer.encode(text).ids

    def __call__(self, text: str) -> np.ndarray:
        ids = self.token_ids(text)
        with torch.inference_mode():
            vector = self._module(*_inputs(ids, real=len(ids)))
        return np.asarray(vector[0].numpy(), dtype=np.float32)


def _inputs(ids: list[int], *, real: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    input_ids = np.asarray([ids], dtype=np.int64)
    mask = np.zeros_like(input_ids)
    mask[0, :real] = 1
    return torch.from_numpy(input_ids), torch.from_numpy(mask), torch.from_numpy(np.zeros_like(input_ids))
