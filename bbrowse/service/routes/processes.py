"""Routes of the processes area (being built)."""

from fastapi import APIRouter

router = APIRouter()
