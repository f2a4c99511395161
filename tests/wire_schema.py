"""Hindsight's schema as ``hindsight-client`` states it, for holding the package's wire (``HindsightApi``) to it.

``hindsight_client_api`` is generated from Hindsight's OpenAPI document: each API method knows its HTTP method,
route, query parameters, body model and answer model. :class:`ClientSchema` reads those off the client itself
(nothing is restated here), finds the route a request took, and lists what in a request or an answer the client's
pydantic models do not accept: a field they do not know, a value they refuse, a route or query parameter the client
does not have. A Hindsight upgrade (with its client) that renames or retypes any of them makes the list non-empty.

Test support only: importing the client takes about a second (it builds ~200 models), so it never runs per turn.
"""

from __future__ import annotations

import inspect
import re
import typing
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from memory_adapter.transport import HttpRequest, HttpResponse

__all__ = ["ClientRoute", "ClientSchema", "model_in"]


@dataclass(frozen=True)
class ClientRoute:
    """One operation of the client: ``name`` is its method on the generated API class."""

    name: str
    method: str
    template: str
    query: Mapping[str, Any]
    """Each query parameter's annotation (its type and bounds)."""
    body: type[BaseModel] | None
    answer: type[BaseModel] | None

    @property
    def pattern(self) -> re.Pattern[str]:
        """The template as a regular expression: a placeholder is one segment, but a file's ``{key}`` is a path (the
        server's ``{key:path}``: ``banks/<bank>/exports/<id>/transfer.zip``)."""
        escaped = re.escape(self.template).replace(re.escape("{key}"), ".+")
        return re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", escaped) + "$")


class ClientSchema:
    """Every route of ``hindsight_client_api`` with its models."""

    def __init__(self) -> None:
        import hindsight_client_api.api as apis

        self.routes = [
            route
            for name in dir(apis)
            if name.endswith("Api") and isinstance(getattr(apis, name), type)
            for route in _routes(getattr(apis, name))
        ]

    def route(self, request: HttpRequest) -> ClientRoute | None:
        """The client's route for ``request`` (the most literal one when templates overlap), or ``None``."""
        path = urllib.parse.urlsplit(request.path).path
        found = [r for r in self.routes if r.method == request.method and r.pattern.match(path)]
        return min(found, key=lambda r: r.template.count("{"), default=None)

    def request_problems(self, route: ClientRoute, request: HttpRequest) -> list[str]:
        """What of ``request``'s query and body the client's route and body model do not accept."""
        where = f"{request.method} {route.template}"
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(request.path).query)
        problems = []
        for key, values in query.items():
            if key not in route.query:
                problems.append(f"{where}: query parameter {key!r} unknown to the client")
                continue
            taken = [_scalar(v) for v in values]  # one value may be a list of one
            candidates = [taken] if len(taken) > 1 else [taken[0], taken]
            refusals = [_refusal(route.query[key], candidate) for candidate in candidates]
            if all(refusals):
                problems.append(f"{where}: query parameter {key}={values} refused: {refusals[0]}")
        if request.body is not None:
            if route.body is None:
                problems.append(f"{where}: sends a body the client's route does not take")
            else:
                problems += _model_problems(route.body, request.body, f"{where} request")
        return problems

    def answer_problems(self, route: ClientRoute, response: HttpResponse) -> list[str]:
        """What of a 2xx answer the client's answer model does not accept (an answer that is no model is not
        checked: a file download)."""
        if route.answer is None or not 200 <= response.status < 300:
            return []
        return _model_problems(route.answer, response.body, f"{response.status} answer to {route.template}")


def _routes(api: type) -> Iterator[ClientRoute]:
    for name, method in inspect.getmembers(api, inspect.isfunction):
        serializer = getattr(api, f"_{name}_serialize", None)
        if name.startswith("_") or serializer is None:
            continue
        source = inspect.getsource(serializer)
        http_method = re.search(r"method='(\w+)'", source)
        template = re.search(r"resource_path='([^']+)'", source)
        if http_method is None or template is None:
            continue
        body_param = re.search(r"_body_params = (\w+)", source)
        signature = inspect.signature(method)
        body = model_in(signature.parameters[body_param[1]].annotation) if body_param else None
        yield ClientRoute(
            name=name,
            method=http_method[1],
            template=template[1],
            query={
                key: signature.parameters[key].annotation
                for key in re.findall(r"_query_params\.append\(\('(\w+)'", source)
                if key in signature.parameters
            },
            body=body,
            answer=model_in(signature.return_annotation),
        )


def _refusal(annotation: Any, value: Any) -> str | None:
    try:
        TypeAdapter(annotation).validate_python(value)
    except ValidationError as exc:
        return str(exc.errors()[0]["msg"])
    return None


def _scalar(text: str) -> Any:
    """A query string's value as the client's method would have taken it (a number as a number)."""
    try:
        return int(text)
    except ValueError:
        return text


def model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model in an annotation (``Optional[Model]``, ``List[Model]``; not a mapping's), or ``None``."""
    if typing.get_origin(annotation) is dict:
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_in(arg)
        if found is not None:
            return found
    return None


def _model_problems(model: type[BaseModel], data: Any, where: str) -> list[str]:
    """``data`` as the client reads it (its model's ``from_dict``): what that refuses, and every key (at any depth) the
    model does not know."""
    try:
        model.from_dict(data)  # type: ignore[attr-defined]  # every generated model has it
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return [f"{where}: {model.__name__} refuses it: {errors}"]
    except (ValueError, TypeError, KeyError) as exc:
        return [f"{where}: {model.__name__} refuses it: {type(exc).__name__}: {str(exc)[:300]}"]
    return list(_unknown_keys(model, data, where))


def _unknown_keys(model: type[BaseModel], data: Any, where: str) -> Iterator[str]:
    if not isinstance(data, dict):
        return
    fields = {(field.alias or name): field for name, field in model.model_fields.items()}
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            yield f"{where}: {model.__name__} has no field {key!r}"
            continue
        inner = model_in(field.annotation)
        if inner is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            yield from _unknown_keys(inner, item, f"{where}.{key}")
