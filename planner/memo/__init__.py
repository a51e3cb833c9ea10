"""The purchase memo: each tranche's own use, cash by year, the re-solves of the downside and commitment curve."""
