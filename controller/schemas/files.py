"""Placeholder: filled in below."""
from pydantic import BaseModel


class ScenarioFile(BaseModel):
    pass


class FabricScenarioFile(BaseModel):
    pass


class LabFile(BaseModel):
    pass
