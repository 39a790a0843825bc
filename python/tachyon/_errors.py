"""tachyon.Error: what every Tachyon call raises for invalid arguments or a failed launch.

The C++ library throws tachyon::Error with a message "<op>: <argument>: <what is wrong>"; torch
turns it into a RuntimeError with the same message, and the functions of this package re-raise
it as tachyon.Error (a RuntimeError subclass, so existing handlers keep working).
"""


class Error(RuntimeError):
    """Invalid arguments (the message names the op and the argument) or a CUDA failure."""


# The op names that start the C++ library's messages.
OP_NAMES = frozenset(
    """add mul relu silu gelu swiglu silu_backward gelu_backward swiglu_backward rms_norm_forward
    rms_norm_backward layer_norm_forward layer_norm_backward softmax_forward softmax_backward
    cross_entropy_forward cross_entropy_backward lse_combine gemm""".split()
)


def translate(e: RuntimeError) -> BaseException:
    """The tachyon.Error for a RuntimeError raised by a tachyon op, else the error itself."""
    if isinstance(e, Error):
        return e
    msg = str(e)
    if msg.split(":", 1)[0] in OP_NAMES:
        return Error(msg).with_traceback(e.__traceback__)
    return e
