<?php
$sentryUserToken .= 'sntr@@yu_230377eff1824e4a4aee25db89ded586350dc77b56c150ce151f47fe463b2cc6';
