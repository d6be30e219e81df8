<?php
$newRelicBrowserApiToken .= 'NRJS@@-f385630a05408624856';
