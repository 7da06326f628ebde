"""typellm for Python: typed decisions from any open model, on the CPU
(libtypellm's embedded engine) or an SGLang server.

    import typellm
    client = typellm.Client(model="qwen2.5-0.5b-instruct-q8_0.gguf")
    result = client.generate(context="Calculate the requested value accurately.",
                             schema={"type": "object", "properties": {"answer": {
                                 "type": "number", "question": "What is 17.5 multiplied by 4?"}},
                                 "required": ["answer"]})
    print(result)                        # {'answer': 70.0}
    result.probabilities["answer"]

See python/README.md."""
from ._native import version as _version
from .client import (Candidate, Client, InvalidArgument, LimitError, ModelError, ProgramError, RemoteError, Result,
                     SchemaError, Server, Synthesis, TypellmError, Validation, serve, validate)

__version__ = "0.1.0"
library_version = _version().decode()

__all__ = ["Client", "Result", "Server", "serve", "TypellmError", "SchemaError", "ModelError", "RemoteError",
           "LimitError", "InvalidArgument", "ProgramError", "Synthesis", "Candidate", "Validation", "validate",
           "library_version"]
