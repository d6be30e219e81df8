<?php
$harnessApiKey .= 'pat.@@rblvz19phgrvwa94ayngk2.55qztslnphbv5bedz5zmzb0v.8z8v75c6m5bjkmuvf1de';
