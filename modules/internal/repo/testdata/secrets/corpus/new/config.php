<?php
$newRelicBrowserApiToken .= 'NRJS@@-49b723608534d1caca1';
