"""GPU names and sizes the clouds' catalogs leave out or spell their own way, in the planner's names.

The planner's names are those of the shipped real price sheets (``../shared/data/real/README.md``):
``T4, T4G, A10, A10G, L4, L40S, V100-16GB, V100-32GB, A100-40GB, A100-80GB, H100-80GB, H100-NVL-94GB, H200,
B200, RTX-PRO-6000, K80, M60, ...``. One table per source: SkyPilot's accelerator names, the GPU model of
each AWS instance family (the Price List gives a GPU count, not a model), each Azure GPU VM size (the
Retail Prices API gives neither) and the GPU words of GCP's SKU descriptions.
"""

from __future__ import annotations

import pandas as pd

# SkyPilot catalog AcceleratorName -> planner name (names not listed: spaces become '-')
SKYPILOT_NAMES = {
    "A100": "A100-40GB", "A100-80GB": "A100-80GB", "H100": "H100-80GB", "H100-MEGA": "H100-80GB",
    "H200": "H200", "B200": "B200", "L4": "L4", "L40S": "L40S", "A10G": "A10G", "A10": "A10", "T4": "T4",
    "T4g": "T4G", "V100": "V100-16GB", "V100-32GB": "V100-32GB", "K80": "K80", "M60": "M60", "P100": "P100",
    "P4": "P4", "K520": "K520", "Radeon MI25": "Radeon-MI25", "Radeon Pro V520": "Radeon-Pro-V520",
}

# AWS instance family -> GPU model (as prices_aws.csv names them); the GPU count comes from the file
AWS_FAMILIES = {
    "p2": "K80", "p3": "V100-16GB", "p3dn": "V100-32GB", "p4d": "A100-40GB", "p4de": "A100-80GB",
    "p5": "H100-80GB", "p5e": "H200", "p5en": "H200", "p6-b200": "B200", "p6-b300": "B300", "g3": "M60",
    "g3s": "M60", "g4dn": "T4", "g4ad": "Radeon-Pro-V520", "g5": "A10G", "g5g": "T4G", "g6": "L4", "gr6": "L4",
    "g6e": "L40S", "g7e": "RTX-PRO-6000", "g2": "K520",
}

# Azure VM size -> (GPU, GPUs per instance). Fractions are GPU partitions (NVv4: 1/8 .. 1 MI25;
# NVadsA10 v5: 1/6 .. 2 A10). ND96isr_H100_v5 has 8 GPUs (the SkyPilot v6 catalog says 12).
AZURE_SKUS = {
    "Standard_NC6": ("K80", 1), "Standard_NC12": ("K80", 2), "Standard_NC24": ("K80", 4), "Standard_NC24r": ("K80", 4),
    "Standard_NC6s_v2": ("P100", 1), "Standard_NC12s_v2": ("P100", 2), "Standard_NC24s_v2": ("P100", 4),
    "Standard_NC24rs_v2": ("P100", 4),
    "Standard_NC6s_v3": ("V100-16GB", 1), "Standard_NC12s_v3": ("V100-16GB", 2), "Standard_NC24s_v3": ("V100-16GB", 4),
    "Standard_NC24rs_v3": ("V100-16GB", 4), "Standard_ND40rs_v2": ("V100-32GB", 8),
    "Standard_NC4as_T4_v3": ("T4", 1), "Standard_NC8as_T4_v3": ("T4", 1), "Standard_NC16as_T4_v3": ("T4", 1),
    "Standard_NC64as_T4_v3": ("T4", 4),
    "Standard_NC24ads_A100_v4": ("A100-80GB", 1), "Standard_NC48ads_A100_v4": ("A100-80GB", 2),
    "Standard_NC96ads_A100_v4": ("A100-80GB", 4), "Standard_ND96asr_v4": ("A100-40GB", 8),
    "Standard_ND96amsr_A100_v4": ("A100-80GB", 8),
    "Standard_ND96isr_H100_v5": ("H100-80GB", 8), "Standard_ND96isr_H200_v5": ("H200", 8),
    "Standard_NC40ads_H100_v5": ("H100-NVL-94GB", 1), "Standard_NC80adis_H100_v5": ("H100-NVL-94GB", 2),
    "Standard_NV6": ("M60", 1), "Standard_NV12": ("M60", 2), "Standard_NV24": ("M60", 4),
    "Standard_NV12s_v3": ("M60", 1), "Standard_NV24s_v3": ("M60", 2), "Standard_NV48s_v3": ("M60", 4),
    "Standard_NV6ads_A10_v5": ("A10", 1 / 6), "Standard_NV12ads_A10_v5": ("A10", 1 / 3),
    "Standard_NV18ads_A10_v5": ("A10", 0.5), "Standard_NV36ads_A10_v5": ("A10", 1),
    "Standard_NV36adms_A10_v5": ("A10", 1), "Standard_NV72ads_A10_v5": ("A10", 2),
    "Standard_NV4as_v4": ("Radeon-MI25", 0.125), "Standard_NV8as_v4": ("Radeon-MI25", 0.25),
    "Standard_NV16as_v4": ("Radeon-MI25", 0.5), "Standard_NV32as_v4": ("Radeon-MI25", 1),
}

# GCP SKU description words -> planner name, most specific first (first match wins)
GCP_DESCRIPTIONS = (
    (r"A100 80GB", "A100-80GB"), (r"A100", "A100-40GB"), (r"H100 80GB Mega|H100 Mega", "H100-80GB"),
    (r"H100", "H100-80GB"), (r"H200", "H200"), (r"B200", "B200"), (r"RTX PRO 6000|RTX 6000", "RTX-PRO-6000"),
    (r"L4\b", "L4"), (r"T4\b", "T4"), (r"V100", "V100-16GB"), (r"P100", "P100"), (r"P4\b", "P4"), (r"K80", "K80"),
)


def skypilot_gpu_names(names: pd.Series) -> pd.Series:
    """SkyPilot accelerator names in the planner's spelling (unlisted names: spaces become '-')."""
    text = names.astype(str).str.strip()
    return text.map(SKYPILOT_NAMES).fillna(text.str.replace(r"\s+", "-", regex=True))


def aws_family_gpus(instance_types: pd.Series) -> pd.Series:
    """The GPU model of each AWS instance type from its family (p5.48xlarge -> H100-80GB); NaN when unknown."""
    family = instance_types.astype(str).str.split(".").str[0]
    return family.map(AWS_FAMILIES)


def azure_sku_table() -> pd.DataFrame:
    """The built-in Azure GPU VM sizes: ``instance_type``, ``gpu_type``, ``gpus_per_instance``."""
    return pd.DataFrame([(k, g, float(n)) for k, (g, n) in AZURE_SKUS.items()],
                        columns=["instance_type", "gpu_type", "gpus_per_instance"])


def gcp_gpu_names(descriptions: pd.Series) -> pd.Series:
    """The GPU named in each GCP SKU description ("Nvidia Tesla A100 GPU running in Americas" -> A100-40GB); NaN
    where no known GPU is named."""
    out = pd.Series(pd.NA, index=descriptions.index, dtype="object")
    text = descriptions.astype(str)
    for pattern, name in GCP_DESCRIPTIONS:
        hit = out.isna() & text.str.contains(pattern, regex=True)
        out = out.mask(hit, name)
    return out
