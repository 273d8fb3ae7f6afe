"""What every model of the configuration shares."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

__all__ = ["FrozenModel"]


class FrozenModel(BaseModel):
    """The base of every configuration model: unknown keys refused, frozen, lax types
    except that ``true`` is no number."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_true_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """Lax pydantic reads ``true`` as 1 for a number; ``nodes.max: true`` is a mistake,
        not a count."""
        if isinstance(value, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            types = {annotation, *getattr(annotation, "__args__", ())}
            if bool not in types and int in types:
                raise PydanticCustomError("int_type", "Input should be a valid integer")
            if bool not in types and float in types:
                raise PydanticCustomError("float_type", "Input should be a valid number")
        return value
