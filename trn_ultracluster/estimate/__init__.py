"""Cost and deploy-time estimate of a synthesized stack, before anyone pays.

:func:`~.bill.bill_of_materials` reads what bills by the hour from the template;
:mod:`.prices` prices it (a dated offline table, or the AWS Price List API with
credentials); :func:`~.report.estimate` adds the first deploy's critical path and
:func:`~.report.format_estimate` prints it. No AWS CDK import: the job CLI uses it.
"""

from trn_ultracluster.estimate.bill import Bill, BillItem, bill_of_materials
from trn_ultracluster.estimate.prices import OfflinePrices, PriceListPrices, PriceSource
from trn_ultracluster.estimate.report import Estimate, Line, estimate, format_estimate

__all__ = ["Bill", "BillItem", "Estimate", "Line", "OfflinePrices", "PriceListPrices",
           "PriceSource", "bill_of_materials", "estimate", "format_estimate"]
